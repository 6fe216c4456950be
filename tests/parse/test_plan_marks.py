"""Marker edits through the plan parser's positions: only the marker, the phase's own boxes
and the metadata Status change; fingerprints ignore exactly those."""

from __future__ import annotations

from baton_lsp.model.plan import FINISHED, STARTED
from baton_lsp.parse.plan import parse_plan_text
from baton_lsp.parse.plan_marks import mark_phase, phase_fingerprints

G3 = ("\ufeff# Plan\r\n- **Status**: NOT STARTED\r\n\r\n## Phases\r\n"
      "### Phase 1: One\r\n**Status**: PENDING\r\n- [~] half\r\n"
      "### Phase 2: Two [See: phase_2_two.md]\r\n1. [ ] numbered\r\n")


def test_a_body_status_a_bom_and_an_unbracketed_metadata_status() -> None:
    data = G3.encode()
    once = mark_phase(data, "1", FINISHED, tick=True)
    assert once == G3.replace("**Status**: PENDING", "**Status**: COMPLETE").replace(
        "- [~] half", "- [x] half").replace("- **Status**: NOT STARTED",
                                            "- **Status**: IN PROGRESS").encode()
    both = mark_phase(once, "2", STARTED)
    assert both is not None and b"### Phase 2: Two [See: phase_2_two.md] [IN PROGRESS]\r\n" in both
    done = mark_phase(both, "2", FINISHED, tick=True)
    assert done is not None and b"- **Status**: COMPLETE\r\n" in done
    assert b"1. [x] numbered" in done and done.startswith(b"\xef\xbb\xbf")
    assert mark_phase(done, "2", FINISHED, tick=True) == done  # idempotent


def test_nothing_to_mark_is_none() -> None:
    assert mark_phase(b"# Plan\n### Phase 1: A\n", "7", STARTED) is None
    assert mark_phase(b"\xff\xfe not text", "1", STARTED) is None
    plain = b"# Plan\n### Phase 1: A\n"  # no metadata Status: none is added
    assert mark_phase(plain, "1", STARTED) == b"# Plan\n### Phase 1: A [IN PROGRESS]\n"


def test_fingerprints_ignore_markers_and_boxes_but_not_words() -> None:
    text = "# P\n### Phase 1: A [NOT STARTED]\n- [ ] do it\n### Phase 2: B\n- [ ] b\n"
    marked = mark_phase(text.encode(), "1", FINISHED, tick=True)
    assert marked is not None
    new = marked.decode()
    assert "### Phase 1: A [COMPLETE]\n- [x] do it" in new
    before = phase_fingerprints(text, parse_plan_text(text))
    assert phase_fingerprints(new, parse_plan_text(new)) == before
    reworded = new.replace("do it", "do it twice")
    assert phase_fingerprints(reworded, parse_plan_text(reworded))["1"] != before["1"]
