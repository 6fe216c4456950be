"""Precision on the judged corpus: every finding labelled, no true one lost, ≥ 95 % true."""

from __future__ import annotations

from pathlib import Path

from tests.labels import LABELS, VERDICTS, assert_judged, findings, judge, read_labels

TARGET = 0.95


def test_labels_are_well_formed() -> None:
    labels = read_labels()
    assert labels, f"{LABELS} is empty"
    for label in labels:
        assert label.verdict in VERDICTS, label
        assert label.reason.strip(), f"{label}: every label needs its one-line reason"


def test_every_finding_on_the_corpus_is_judged(corpus: Path) -> None:
    result = judge(findings(corpus), read_labels(), corpus)
    assert_judged(result, LABELS, TARGET)
