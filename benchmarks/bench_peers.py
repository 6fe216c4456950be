"""Baton beside the linters for the same trees: agnix, skilllint (and skillsaw, claude-code-lint).

Run: `python benchmarks/bench_peers.py [--tree DIR ...] [--rounds N] [--out DIR]`.

Trees: `--tree` as often as given, else the shared corpus, every tree under `../unseen/` and
every tree under `~/.cache/baton-author-trees/` that exists. The peers are installed pinned by
`peers.py` (agnix, skilllint and skillsaw from PyPI, claude-code-lint from npm).

Two parts:

* **Time.** Whole processes, timed from spawn, in rounds; within a round every tool runs
  once on the tree, in an order rotated each round, so load from other processes weighs on
  all of them alike. Baton runs three ways: *cold* (a new empty result cache, ShellCheck at
  its default), *cold, ShellCheck off* and *warm* (the cache the cold run filled: nothing
  changed, so the stored check is replayed). Each figure is the median over rounds; each
  ratio is the median of the per-round ratios to agnix's (cold: it has no cache).
* **Findings.** One run of each tool per tree; every finding is mapped to (file relative to
  the tree, line, class). The class is what the finding is about, in words shared by the
  tools (`CLASSES` below: one tool's code for "agent has no `name`" and another's for the
  same thing are one class); a code not in the table keeps a class of its own. A finding of
  tool X is *also found* by tool Y when Y reports the same class in the same file within
  `NEAR` lines (either side without a line, or on line 1, counts as near). The rest are
  "only-X" findings, written to `only.tsv` with empty `label` and `reason` columns for judging
  (TRUE/FALSE as in tests/labels.py); `findings.tsv` has all of them, `results.json` the
  figures.

Nothing is written into the trees (claude-code-lint runs with `--no-cache`).
"""

from __future__ import annotations

import argparse
import compileall
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))  # peers.py and bench_check.py beside this file

import peers  # type: ignore[import-not-found]  # noqa: E402
from bench_check import machine, timed, use_bytecode  # type: ignore[import-not-found]  # noqa: E402

NEAR = 3
FILE_LEVEL = (None, 1)
"""Lines that stand for the whole file: agnix reports a front-matter finding on line 1 (where
Baton names the key's line), skilllint most findings without a line."""
TIMEOUT_S = 900
BATON = [sys.executable, "-m", "baton_lsp", "check"]
PEERS = ("agnix", "skilllint", "skillsaw", "claudelint")
"""Every peer the benchmark knows; `--peers` picks some (agnix is always timed: the ratios)."""

# What each tool's codes are about, in shared words: codes grouped only where their messages
# on the benchmark's trees say the same thing (agnix: `agnix explain CODE`; skilllint: `skilllint
# rule CODE`; skillsaw and claude-code-lint: their rule ids). skilllint's FM001/FM006 carry the
# field (`FM006:model`). The rest keep a class of their own (`tool:code`).
CLASSES: dict[str, str] = {
    "CC-AG-001": "agent-name-missing", "FM001:name": "agent-name-missing",
    "BTN205": "agent-name-missing",
    "CC-AG-003": "agent-model-invalid", "FM006:model": "agent-model-invalid",
    "agent-model": "agent-model-invalid", "BTN207": "agent-model-invalid",
    "CC-AG-009": "agent-tool-unknown", "BTN206": "agent-tool-unknown",
    "FM003": "frontmatter-missing", "claude-agent-frontmatter": "frontmatter-missing",
    "BTN201": "frontmatter-missing",
    "FM002": "frontmatter-unreadable", "CC-AG-007": "frontmatter-unreadable",
    "AS-016": "frontmatter-unreadable", "claude-command-frontmatter": "frontmatter-unreadable",
    "agentskill-valid": "frontmatter-unreadable", "Skills Validator": "frontmatter-unreadable",
    "BTN202": "frontmatter-unreadable", "BTN203": "frontmatter-unreadable",
    "BTN303": "frontmatter-unreadable", "BTN701": "frontmatter-unreadable",
    "CC-SK-002": "skill-context-invalid", "FM006:context": "skill-context-invalid",
    "CC-MEM-001": "import-missing", "claude-md-import-missing": "import-missing",
    "instruction-imports-valid": "import-missing", "BTN830": "import-missing",
    "BTN836": "import-missing", "BTN831": "import-duplicate",
    "CC-SK-017": "frontmatter-key-unknown", "BTN301": "frontmatter-key-unknown",
    "content-broken-internal-reference": "broken-link", "BTN130": "broken-link",
    "BTN133": "broken-link",
    "claude-md-file-reference-invalid": "broken-link", "CDX-AG-005": "broken-link",
    "content-unclosed-fence": "unclosed-fence", "BTN140": "unclosed-fence",
    "BTN325": "unclosed-fence",
    "claude-md-paths": "rules-paths-not-list", "claude-rules-valid": "rules-paths-not-list",
    "CC-SK-021": "home-path", "XP-003": "home-path",
    "AS-025": "skill-defined-twice", "OC-SK-002": "skill-defined-twice",
    "OC-007": "opencode-agent-description-missing", "OC-AG-010":
    "opencode-agent-description-missing", "BTN706": "opencode-agent-description-missing",
    "OC-CFG-001": "opencode-model-id", "BTN705": "opencode-model-id",
    "OC-008": "opencode-permissions-key", "BTN703": "opencode-permissions-key",
    "AS-012": "too-long", "SK006": "too-long", "SK007": "too-long", "context-budget": "too-long",
    "content-progressive-disclosure": "too-long", "CC-MEM-014": "too-long",
    "CC-SK-023": "skill-positional-substituted", "BTN230": "skill-positional-substituted",
    "AS-020": "skill-description-no-trigger", "SK005:description":
    "skill-description-no-trigger",
}


BY_MESSAGE: dict[tuple[str, str], str] = {
    ("REF-001", "Import target not found"): "import-missing",
    ("REF-003", "Duplicate @import"): "import-duplicate",
}
"""Codes that stand for several things, told apart by the message's start."""


@dataclass(frozen=True)
class Finding:
    tool: str
    tree: str
    file: str
    line: int | None
    code: str
    message: str

    @property
    def kind(self) -> str:
        for (code, start), kind in BY_MESSAGE.items():
            if self.code == code and self.message.startswith(start):
                return kind
        return CLASSES.get(self.code) or f"{self.tool}:{self.code}"


def _rel(tree: Path, name: str) -> str:
    path = Path(name)
    if not path.is_absolute():
        path = tree / path
    try:
        return os.path.relpath(os.path.realpath(path), os.path.realpath(tree))
    except ValueError:
        return name


def _line(value: object) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def parse_baton(tree: Path, out: str) -> list[Finding]:
    return [Finding("baton", tree.name, _rel(tree, f["filename"]),
                    _line((f.get("location") or {}).get("line")), f["code"], f["message"])
            for f in json.loads(out or "[]")]


def parse_agnix(tree: Path, out: str) -> list[Finding]:
    return [Finding("agnix", tree.name, _rel(tree, d["file"]), _line(d.get("line")), d["rule"],
                    d["message"]) for d in json.loads(out)["diagnostics"]]


def parse_skilllint(tree: Path, out: str) -> list[Finding]:
    found = []
    for f in json.loads(out).get("files", []):
        for v in f.get("validators", []):
            for i in v.get("issues", []):
                field = i.get("field") or ""
                keyed = field in ("name", "description", "model", "context")
                code = f"{i['code']}:{field}" if keyed else i["code"]
                found.append(Finding("skilllint", tree.name, _rel(tree, f["path"]),
                                     _line(i.get("line")), code, i["message"]))
    return found


def parse_skillsaw(tree: Path, out: str) -> list[Finding]:
    return [Finding("skillsaw", tree.name, _rel(tree, v.get("file_path") or "."),
                    _line(v.get("line")), v["rule_id"], v["message"])
            for v in json.loads(out).get("violations", [])]


def parse_claudelint(tree: Path, out: str) -> list[Finding]:
    found = []
    for v in json.loads(out).get("validators", []):
        for issue in [*v.get("errors", []), *v.get("warnings", [])]:
            found.append(Finding("claudelint", tree.name, _rel(tree, issue.get("file") or "."),
                                 _line(issue.get("line")), issue.get("ruleId") or v["name"],
                                 issue["message"]))
    return found


def commands(tree: Path) -> dict[str, tuple[list[str], Path | None,
                                             Callable[[Path, str], list[Finding]]]]:
    """Each tool's command for `tree` (its JSON output), its working directory, its parser."""
    return {
        "baton": ([*BATON, "--format", "json", "--no-cache", str(tree)], None, parse_baton),
        "agnix": ([*peers.agnix(), "--format", "json", str(tree)], None, parse_agnix),
        "skilllint": ([*peers.skilllint(), "check", "--check", "--json", "--no-color",
                       str(tree)], None, parse_skilllint),
        "skillsaw": ([*peers.skillsaw(), "lint", "--format", "json", "--no-progress",
                      str(tree)], None, parse_skillsaw),
        "claudelint": ([*peers.claudelint(), "check-all", "--cwd", str(tree), "--no-cache",
                        "--format", "json"], tree, parse_claudelint),
    }


def findings(tree: Path, tools: Iterable[str]) -> tuple[list[Finding], dict[str, str]]:
    """One run of each tool on `tree`; the findings, and an error per tool that failed."""
    got: list[Finding] = []
    errors: dict[str, str] = {}
    for tool, (cmd, cwd, parse) in commands(tree).items():
        if tool not in tools:
            continue
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False, errors="replace")
        try:
            got.extend(parse(tree, proc.stdout))
        except (ValueError, KeyError, TypeError) as exc:
            errors[tool] = (f"exit {proc.returncode}, unreadable output ({exc}): "
                            f"{(proc.stderr or proc.stdout)[-300:]!r}")
    return got, errors


def _near(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a in FILE_LEVEL or b in FILE_LEVEL or abs(a - b) <= NEAR


def only(found: list[Finding]) -> dict[str, list[Finding]]:
    """Per tool, its findings no other tool also has (same file and class, lines near)."""
    by_key: dict[tuple[str, str], list[Finding]] = defaultdict(list)
    for f in found:
        by_key[(f.file, f.kind)].append(f)
    out: dict[str, list[Finding]] = defaultdict(list)
    for f in found:
        others = [g for g in by_key[(f.file, f.kind)] if g.tool != f.tool]
        if not any(_near(f.line, g.line) for g in others):
            out[f.tool].append(f)
    return out


# -- time -----------------------------------------------------------------------------------


def time_tree(tree: Path, rounds: int, tools: Iterable[str],
              baseline: Path | None = None) -> dict[str, Any]:
    """Median wall and CPU per tool and Baton mode over `rounds`, and ratios to agnix. With
    `baseline` (the `server/` directory of another Baton checkout) that Baton's cold checks
    run in the same rounds, through `PYTHONPATH`."""
    cache = Path(tempfile.mkdtemp(prefix="baton-bench-peers-cache-"))
    env = {"BATON_CACHE_DIR": str(cache)}
    baton = [*BATON, str(tree)]
    runs: dict[str, Callable[[], tuple[float, float, int]]] = {}
    for tool in tools:
        cmd, cwd, _ = commands(tree)[tool]
        if tool != "baton":
            runs[tool] = lambda cmd=cmd, cwd=cwd: timed(cmd, cwd=cwd)

    def cold() -> tuple[float, float, int]:
        shutil.rmtree(cache, ignore_errors=True)
        return timed(baton, env=env)

    def cold_off() -> tuple[float, float, int]:
        return timed([*baton, "--no-shellcheck", "--no-cache"], env=env)

    def warm() -> tuple[float, float, int]:
        return timed(baton, env=env)

    order: list[tuple[str, Callable[[], tuple[float, float, int]]]] = [
        *runs.items(), ("baton cold", cold), ("baton cold, ShellCheck off", cold_off)]
    if baseline is not None:
        old = {**env, "PYTHONPATH": str(baseline)}
        order += [("baseline cold", lambda: timed([*baton, "--no-cache"], env=old)),
                  ("baseline cold, ShellCheck off",
                   lambda: timed([*baton, "--no-cache", "--no-shellcheck"], env=old))]
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    try:
        timed(baton, env=env)  # the OS file cache warm for every tool
        for r in range(rounds):
            turn = order[r % len(order):] + order[:r % len(order)]
            for name, run in turn:
                wall, cpu, _ = run()
                rows[name].append((wall, cpu))
                if name == "baton cold":  # warm right after its cold run filled the cache
                    timed(baton, env=env)  # stores the check if the first found files too new
                    wall, cpu, _ = warm()
                    rows["baton warm"].append((wall, cpu))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    out: dict[str, Any] = {}
    for name, values in rows.items():
        out[name] = {"wall_s": statistics.median(v[0] for v in values),
                     "cpu_s": statistics.median(v[1] for v in values)}
        if "agnix" in rows:
            pairs = list(zip(values, rows["agnix"], strict=True))
            out[name]["ratio_wall"] = statistics.median(v[0] / a[0] for v, a in pairs)
            out[name]["ratio_cpu"] = statistics.median(v[1] / a[1] for v, a in pairs)
    return out


# -- main -----------------------------------------------------------------------------------


def default_trees() -> list[Path]:
    trees = [REPO.parent / "shared" / "corpus"]
    for parent in (REPO.parent / "unseen", Path.home() / ".cache" / "baton-author-trees"):
        if parent.is_dir():
            trees.extend(sorted(p for p in parent.iterdir() if p.is_dir()))
    return [t for t in trees if t.is_dir()]


def count_files(tree: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(tree))


def write_tsv(path: Path, rows: Iterable[Finding], judged: bool) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, delimiter="\t", lineterminator="\n")
        out.writerow(["tool", "tree", "file", "line", "class", "code", "message",
                      *(["label", "reason"] if judged else [])])
        for f in rows:
            out.writerow([f.tool, f.tree, f.file, f.line or "", f.kind, f.code,
                          " ".join(f.message.split())[:300], *(["", ""] if judged else [])])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, action="append",
                        help="a tree to run every tool on (repeatable; default: see above)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="timed rounds per tree (0: findings only)")
    parser.add_argument("--peers", default="agnix,skilllint",
                        help=f"comma list of peers beside Baton (of {', '.join(PEERS)})")
    parser.add_argument("--no-findings", action="store_true", help="time only")
    parser.add_argument("--baseline", type=Path,
                        help="the server/ directory of another Baton checkout (e.g. a `git "
                        "worktree` of an older commit): its cold checks are timed too")
    parser.add_argument("--out", type=Path, default=Path("bench-peers-out"),
                        help="where findings.tsv, only.tsv and results.json go")
    args = parser.parse_args(argv)
    chosen = [p.strip() for p in args.peers.split(",") if p.strip()]
    unknown = sorted(set(chosen) - set(PEERS))
    if unknown:
        parser.error(f"unknown peer(s): {', '.join(unknown)} (known: {', '.join(PEERS)})")
    tools = ["baton", *dict.fromkeys(["agnix", *chosen])]
    trees = args.tree or default_trees()
    missing = [str(t) for t in trees if not t.is_dir()]
    if args.baseline is not None and not (args.baseline / "baton_lsp").is_dir():
        parser.error(f"--baseline {args.baseline}: no baton_lsp package there")
    if missing:
        parser.error(f"not a directory: {', '.join(missing)}")
    use_bytecode()
    if args.baseline is not None:
        compileall.compile_dir(str(args.baseline / "baton_lsp"), quiet=1)
    try:
        versions = peers.versions(python_peers=True)
    except peers.PeersUnavailable as exc:
        print(f"bench_peers: {exc}", file=sys.stderr)
        return 2
    info = machine()
    print(" · ".join(f"{k}: {v}" for k, v in {**info, **versions}.items()), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"machine": info, "versions": versions, "trees": {},
                               "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    everything: list[Finding] = []
    for tree in trees:
        print(f"\n{tree} ({count_files(tree)} files)", flush=True)
        row: dict[str, Any] = {"files": count_files(tree), "time": (
            time_tree(tree, args.rounds, tools, args.baseline) if args.rounds > 0 else {})}
        for name, fig in row["time"].items():
            ratio = (f"  ×{fig['ratio_wall']:.1f} agnix's wall, ×{fig['ratio_cpu']:.1f} its CPU"
                     if "ratio_wall" in fig else "")
            print(f"  {name:<31} wall {fig['wall_s']:6.2f} s  cpu {fig['cpu_s']:6.2f} s{ratio}",
                  flush=True)
        if not args.no_findings:
            found, errors = findings(tree, tools)
            everything.extend(found)
            row["errors"] = errors
            row["findings"] = dict(Counter(f.tool for f in found))
            for tool, error in errors.items():
                print(f"  {tool}: {error}", flush=True)
        results["trees"][str(tree)] = row
    if not args.no_findings:
        alone = only(everything)
        write_tsv(args.out / "findings.tsv", everything, judged=False)
        write_tsv(args.out / "only.tsv", [f for t in tools for f in alone.get(t, [])],
                  judged=True)
        results["only"] = {t: {"count": len(alone.get(t, [])),
                               "by_class": dict(Counter(f.kind for f in alone.get(t, []))
                                                .most_common())} for t in tools}
        print("\nfindings no other tool has (only.tsv):")
        for tool in tools:
            got = alone.get(tool, [])
            top = ", ".join(f"{k} {n}" for k, n in Counter(f.kind for f in got).most_common(6))
            print(f"  only {tool:<10} {len(got):5d}  {top}")
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nwritten to {args.out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
