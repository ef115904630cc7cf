from hypothesis import given
from hypothesis import strategies as st

from memd.passages import MAX_TOKENS, context_header, passages
from memd.tokens import count_tokens


def test_a_conversation_chunk_gives_one_passage_a_turn_with_its_day():
    text = (
        "# 2023-05-25\n\n## Session 2 — 1:14 pm\n\n"
        "**Melanie:** I ran a charity race last Saturday.\n\n"
        "**Caroline:** That sounds great, Mel!"
    )
    got = passages("# 2023-05-25 > ## Session 2 — 1:14 pm", text, "2023-05-25", "memory/x.md")
    assert got == [
        "Thursday, 25 May 2023 (Session 2 — 1:14 pm)\nMelanie: I ran a charity race last Saturday.",
        "Thursday, 25 May 2023 (Session 2 — 1:14 pm)\nCaroline: That sounds great, Mel!",
    ]


def test_list_items_and_fences_are_passages_of_their_own():
    text = "Intro line\n- first item\n  continued\n- second item\n```\n- not an item\n```"
    got = passages("# Stack > ## Database", text, None, "MEMORY.md")
    assert got == [
        "Stack > Database\nIntro line",
        "Stack > Database\n- first item\n  continued",
        "Stack > Database\n- second item",
        "Stack > Database\n```\n- not an item\n```",
    ]


def test_a_custom_note_is_named_in_its_header():
    assert context_header("## API", None, "memory/projects/alpha.md") == "alpha > API"
    assert context_header("# Alpha > ## API", None, "memory/alpha.md") == "Alpha > API"
    assert context_header("# Memory", None, "MEMORY.md") == "Memory"
    assert context_header("", "2026-01-20", "memory/2026-01-20.md") == "Tuesday, 20 January 2026"


@given(st.lists(st.text(alphabet="ab cd\n-`*", max_size=400), min_size=1, max_size=8))
def test_passages_are_bounded_and_keep_every_word(paragraphs):
    text = "\n\n".join(paragraphs)
    got = passages("", text)
    assert all(count_tokens(p) <= MAX_TOKENS + 1 for p in got)
    kept = " ".join(got)
    for word in text.replace("*", " ").replace("#", " ").split():
        if word.strip("-`"):
            assert word.strip("-`") in kept
    assert bool(got) == bool(text.strip())
    assert passages("", text) == got  # deterministic: the cache keys do not move
