"""Precision on the seeds' author's newest trees: every finding labelled, ≥ 95 % true.

The trees (tests/author_trees.txt) are not part of the repository: `scripts/author-trees.sh`
extracts them at their pinned commits (it needs github.com or a local mirror), and these
tests skip, naming what is missing, where they are absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.labels import (
    AUTHOR_LABELS,
    VERDICTS,
    assert_judged,
    author_trees,
    findings,
    judge,
    read_labels,
)

TARGET = 0.95


@pytest.fixture(scope="module")
def trees() -> Path:
    root, problems = author_trees()
    if problems:
        pytest.skip("; ".join(problems))
    return root


def test_author_labels_are_well_formed() -> None:
    labels = read_labels(AUTHOR_LABELS)
    assert labels, f"{AUTHOR_LABELS} is empty"
    names = {line.split()[0].split("/", 1)[1]
             for line in Path(__file__).with_name("author_trees.txt").read_text().splitlines()}
    for label in labels:
        assert label.verdict in VERDICTS and label.verdict != "SAMPLED", label
        assert label.path.split("/", 1)[0] in names, label
        assert label.reason.strip(), f"{label}: every label needs its one-line reason"


def test_every_finding_on_the_author_trees_is_judged(trees: Path) -> None:
    result = judge(findings(trees), read_labels(AUTHOR_LABELS), trees)
    assert_judged(result, AUTHOR_LABELS, TARGET)
