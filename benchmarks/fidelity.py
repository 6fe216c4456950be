"""Precision of Baton's findings on the judged shared corpus, per rule.

    python benchmarks/fidelity.py            # the table in FIDELITY.md
    python benchmarks/fidelity.py --pending  # findings without a label, as TSV rows to judge
    python benchmarks/fidelity.py --trees    # the same on the seeds' author's newest trees
                                             # (scripts/author-trees.sh extracts them)
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.labels import AUTHOR_LABELS, LABELS, author_trees, findings, judge, key_of, read_labels

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--pending", action="store_true",
                        help="print unlabelled findings as TSV rows (verdict left blank)")
    parser.add_argument("--trees", action="store_true",
                        help="judge the seeds' author's trees against tests/author_labels.tsv")
    args = parser.parse_args()
    labels = LABELS
    if args.trees:
        args.corpus, problems = author_trees()
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 2
        labels = AUTHOR_LABELS
    found = findings(args.corpus)
    result = judge(found, read_labels(labels) if labels.exists() else [], args.corpus)
    if args.pending:
        for f in result.unlabelled:
            code, rel, line = key_of(f, args.corpus)
            print(f"?\t{code}\t{rel}\t{line}\t{f.message}")
        return 0
    codes = sorted({c for c, _ in result.counts} | {f.code for f in result.unlabelled})
    pending = Counter(f.code for f in result.unlabelled)
    print("| rule | reported | true | false | sampled | precision |")
    print("|---|---:|---:|---:|---:|---:|")
    for code in codes:
        t, f, s = (result.counts[(code, v)] for v in ("TRUE", "FALSE", "SAMPLED"))
        prec = f"{t / (t + f):.0%}" if t + f else "—"
        print(f"| {code} | {t + f + s + pending[code]} | {t} | {f} | {s} | {prec} |")
    t = sum(n for (_, v), n in result.counts.items() if v == "TRUE")
    f = sum(n for (_, v), n in result.counts.items() if v == "FALSE")
    s = sum(n for (_, v), n in result.counts.items() if v == "SAMPLED")
    print(f"| **all** | {len(found)} | {t} | {f} | {s} | {result.precision():.1%} |")
    if result.unlabelled:
        print(f"\n{len(result.unlabelled)} findings are not labelled yet (--pending lists them)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
