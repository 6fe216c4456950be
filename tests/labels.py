"""The judged corpus: every finding Baton reports on ../shared/corpus, labelled by a person.

`tests/corpus_labels.tsv` has one row per finding: verdict, code, path (relative to the
corpus), line (1-based) and a one-line reason. Verdicts:

* TRUE — reading the file, the finding is a real defect;
* FALSE — it is not (a false positive; the reason says why);
* SAMPLED — the file it needs exists in the original repository but not in the corpus,
  which holds only a sample of each tree (the reason names the file); left out of
  precision, as when the issue's judges measured it.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from baton_lsp.model.base import Finding
from baton_lsp.rules.checker import check_paths

LABELS = Path(__file__).with_name("corpus_labels.tsv")
AUTHOR_LABELS = Path(__file__).with_name("author_labels.tsv")
"""The seeds' author's newest trees (tests/author_trees.txt), judged the same way; paths
start with the tree's name (`nvim/.claude/...`)."""
AUTHOR_TREES_LIST = Path(__file__).with_name("author_trees.txt")
VERDICTS = ("TRUE", "FALSE", "SAMPLED")
Key = tuple[str, str, int]
"""(code, corpus-relative path, 1-based line)."""


@dataclass(frozen=True)
class Label:
    verdict: str
    code: str
    path: str
    line: int
    reason: str

    @property
    def key(self) -> Key:
        return (self.code, self.path, self.line)


def read_labels(path: Path = LABELS) -> list[Label]:
    rows: list[Label] = []
    with path.open(encoding="utf-8", newline="") as fh:
        for row in csv.reader(fh, delimiter="\t"):
            if not row or row[0].startswith("#") or row[0] == "verdict":
                continue
            verdict, code, rel, line, reason = row
            rows.append(Label(verdict, code, rel, int(line), reason))
    return rows


def author_trees() -> tuple[Path, list[str]]:
    """Where `scripts/author-trees.sh` puts the author's trees, and what is wrong with them
    there (missing, or extracted at another commit); empty when all are in place."""
    import os

    base = os.environ.get("BATON_AUTHOR_TREES") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
        "baton-author-trees")
    root = Path(base)
    problems: list[str] = []
    for line in AUTHOR_TREES_LIST.read_text(encoding="utf-8").splitlines():
        repo, commit = line.split()
        stamp = root / repo.split("/", 1)[1] / ".baton-tree"
        try:
            have = stamp.read_text(encoding="utf-8").strip()
        except OSError:
            problems.append(f"{repo} is not in {root} (run scripts/author-trees.sh)")
            continue
        if have != f"{repo}@{commit}":
            problems.append(f"{stamp} says {have}, not {repo}@{commit}")
    return root, problems


def findings(corpus: Path) -> list[Finding]:
    """What `baton check` reports on the whole corpus with the default configuration."""
    return check_paths([corpus], jobs=1).findings


def key_of(finding: Finding, corpus: Path) -> Key:
    rel = Path(finding.path).resolve().relative_to(corpus.resolve()).as_posix()
    return (finding.code, rel, finding.range.start_line + 1)


@dataclass
class Judgement:
    unlabelled: list[Finding]
    lost_true: list[Label]
    stale: list[Label]
    """FALSE/SAMPLED rows no finding matches any more (delete them)."""
    counts: Counter[tuple[str, str]]
    """(code, verdict) → findings reported now."""

    def precision(self, code: str | None = None) -> float:
        t = sum(n for (c, v), n in self.counts.items() if v == "TRUE" and code in (None, c))
        f = sum(n for (c, v), n in self.counts.items() if v == "FALSE" and code in (None, c))
        return t / (t + f) if t + f else 1.0


def judge(found: list[Finding], labels: list[Label], corpus: Path) -> Judgement:
    """Match findings to labels as multisets of keys (several findings may share a line)."""
    pool: dict[Key, list[Label]] = {}
    for label in labels:
        pool.setdefault(label.key, []).append(label)
    unlabelled: list[Finding] = []
    counts: Counter[tuple[str, str]] = Counter()
    for finding in found:
        bucket = pool.get(key_of(finding, corpus))
        if not bucket:
            unlabelled.append(finding)
            continue
        label = bucket.pop(0)
        counts[(label.code, label.verdict)] += 1
    left = [label for bucket in pool.values() for label in bucket]
    return Judgement(unlabelled=unlabelled,
                     lost_true=[lb for lb in left if lb.verdict == "TRUE"],
                     stale=[lb for lb in left if lb.verdict != "TRUE"],
                     counts=counts)


def assert_judged(result: Judgement, labels: Path, target: float) -> None:
    """Every finding labelled in `labels`, no TRUE one lost, no label left over, precision at
    `target` or above."""
    new = [f"{f.code} {f.path}:{f.range.start_line + 1} {f.message}" for f in result.unlabelled]
    assert not new, f"unlabelled findings (judge them in tests/{labels.name}):\n" + \
        "\n".join(new)
    lost = [f"{lb.code} {lb.path}:{lb.line} ({lb.reason})" for lb in result.lost_true]
    assert not lost, "true findings no longer reported:\n" + "\n".join(lost)
    stale = [f"{lb.verdict} {lb.code} {lb.path}:{lb.line}" for lb in result.stale]
    assert not stale, "labels no finding matches any more (delete them):\n" + "\n".join(stale)
    assert result.precision() >= target, f"precision {result.precision():.1%} < {target:.0%}"
