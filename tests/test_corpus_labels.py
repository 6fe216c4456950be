"""Precision on the judged corpus: every finding labelled, no true one lost, ≥ 95 % true."""

from __future__ import annotations

from pathlib import Path

from tests.labels import LABELS, VERDICTS, findings, judge, read_labels

TARGET = 0.95


def test_labels_are_well_formed() -> None:
    labels = read_labels()
    assert labels, f"{LABELS} is empty"
    for label in labels:
        assert label.verdict in VERDICTS, label
        assert label.reason.strip(), f"{label}: every label needs its one-line reason"


def test_every_finding_on_the_corpus_is_judged(corpus: Path) -> None:
    result = judge(findings(corpus), read_labels(), corpus)
    new = [f"{f.code} {f.path}:{f.range.start_line + 1} {f.message}" for f in result.unlabelled]
    assert not new, "unlabelled findings (judge them in tests/corpus_labels.tsv):\n" + \
        "\n".join(new)
    lost = [f"{lb.code} {lb.path}:{lb.line} ({lb.reason})" for lb in result.lost_true]
    assert not lost, "true findings no longer reported:\n" + "\n".join(lost)
    stale = [f"{lb.verdict} {lb.code} {lb.path}:{lb.line}" for lb in result.stale]
    assert not stale, "labels no finding matches any more (delete them):\n" + "\n".join(stale)
    assert result.precision() >= TARGET, f"precision {result.precision():.1%} < {TARGET:.0%}"
