from hypothesis import given
from hypothesis import strategies as st

from memd.sources.chunker import count_tokens
from memd.sources.passages import MAX_TOKENS, PACK_TOKENS, context_header, passages


def test_short_turns_share_a_passage_led_by_their_day():
    text = (
        "# 2023-05-25\n\n## Session 2 — 1:14 pm\n\n"
        "**Melanie:** I ran a charity race last Saturday.\n\n"
        "**Caroline:** That sounds great, Mel!"
    )
    got = passages("# 2023-05-25 > ## Session 2 — 1:14 pm", text, "2023-05-25", "memory/x.md")
    assert got == [
        "Thursday, 25 May 2023 (Session 2 — 1:14 pm)\n"
        "Melanie: I ran a charity race last Saturday.\nCaroline: That sounds great, Mel!"
    ]


def test_blocks_are_packed_up_to_the_pack_size_and_never_split_across_it():
    turns = [f"**P{n}:** " + " ".join(["word"] * 40) for n in range(6)]
    got = passages("## Talk", "\n\n".join(turns), None, "MEMORY.md")
    assert len(got) == 3  # two ~45-token turns a passage
    assert all(count_tokens(p) <= PACK_TOKENS + 10 for p in got)
    assert [p.count("P") for p in got] == [2, 2, 2]


def test_list_items_and_fences_are_cut_apart_then_packed():
    text = "Intro line\n- first item\n  continued\n- second item\n```\n- not an item\n```"
    got = passages("# Stack > ## Database", text, None, "MEMORY.md")
    assert got == ["Stack > Database\n" + text]  # all of it fits one passage
    long = "\n".join(f"- item {n} " + "x " * 60 for n in range(3))
    assert len(passages("", long)) == 3  # items too long to share are their own passages


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
