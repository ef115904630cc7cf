"""One note, one place: how chunks of one note fold or are cut (memd.search.collapse)."""

from memd.search.collapse import one_per_note
from memd.search.ranking import Candidate
from memd.store.rows import Hit


def _cand(chunk_id, start, end, relevance, path="memory/log.md", source="memory", blank=()):
    text = "\n".join("" if n in blank else f"line {n}" for n in range(start, end + 1))
    hit = Hit(chunk_id, path, start, end, "# Log", text, source, None, 1.0)
    return Candidate(hit, relevance=relevance)


def _places(kept):
    return [(c.hit.chunk_id, c.hit.start_line, c.hit.end_line, c.more_chunks) for c in kept]


def test_a_chunk_that_repeats_lines_of_a_better_one_keeps_only_its_own():
    """The neighbour keeps the lines it adds, its text cut to them; the best is untouched."""
    kept = one_per_note([_cand(2, 20, 47, 0.7), _cand(1, 1, 27, 0.9)], min_score=0.3)
    assert _places(kept) == [(1, 1, 27, 0), (2, 28, 47, 0)]
    assert kept[1].hit.text.split("\n") == [f"line {n}" for n in range(28, 48)]


def test_a_chunk_whose_every_line_is_shown_folds_and_is_counted():
    """Between two better chunks that show all its lines, a chunk folds into the one it
    shares most with; below the floor it folds without being counted."""
    cands = [
        _cand(1, 1, 27, 0.9),
        _cand(3, 24, 60, 0.8),
        _cand(2, 10, 30, 0.7),  # lines 10-27 in chunk 1, 28-30 in chunk 3
        _cand(4, 50, 60, 0.1),  # below the floor
    ]
    kept = one_per_note(cands, min_score=0.3)
    assert _places(kept) == [(1, 1, 27, 1), (3, 28, 60, 0)]


def test_blank_lines_alone_are_no_place_of_their_own():
    """What a chunk adds is cut to lines of text; only blank lines left: it folds."""
    kept = one_per_note(
        [_cand(1, 1, 20, 0.9), _cand(2, 15, 23, 0.8, blank={21, 22, 23})], min_score=0
    )
    assert _places(kept) == [(1, 1, 20, 1)]


def test_a_vault_note_folds_whole_and_other_notes_keep_their_place():
    """An extra root's note is one topic: its chunks fold whatever their lines."""
    cands = [
        _cand(1, 1, 10, 0.9, path="vault/Plugins.md", source="extra"),
        _cand(2, 40, 50, 0.8, path="vault/Plugins.md", source="extra"),
        _cand(3, 1, 10, 0.7, path="memory/other.md"),
    ]
    kept = one_per_note(cands, min_score=0)
    assert _places(kept) == [(1, 1, 10, 1), (3, 1, 10, 0)]
