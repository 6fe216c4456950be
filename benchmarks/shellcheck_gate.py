"""Does running ShellCheck without its control-flow graph change what BTN330 reports?

Run: `python benchmarks/shellcheck_gate.py --source DIR [--corpus DIR]`, DIR a checkout of
github.com/koalaman/shellcheck at the tag of the ShellCheck that runs (`git -C DIR checkout
v0.11.0`). Every test snippet of ShellCheck's own test suite (the string a `prop_…` line
hands to `verify`/`verifyNot`/`verifyTree`… in `src/ShellCheck/*.hs`) and every bash block
of the corpus's commands is checked twice, with and without `--extended-analysis=false`;
the figures: how many report other default-selected findings without the graph, and whether
`shellcheck_cfg.needs_graph` sent each of those to the full analysis (it must: "missed" is
a bug), and the share of block text that runs without the graph.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from baton_lsp.model.config import BatonConfig
from baton_lsp.rules.command_shellcheck import selected
from baton_lsp.rules.shellcheck_cfg import gated, needs_graph
from baton_lsp.rules.shellcheck_run import Options, run_many
from baton_lsp.rules.shellcheck_tool import find_shellcheck, shellcheck_version

REPO = Path(__file__).resolve().parent.parent
PROP_STRING = re.compile(r'^prop_\w+\s*=.*"((?:[^"\\]|\\.)*)"\s*$')
HASKELL_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "&": ""}


def haskell_string(body: str) -> str | None:
    """The text of a Haskell string literal's body; None for escapes not handled here."""
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1:i + 2]
        if nxt in HASKELL_ESCAPES:
            out.append(HASKELL_ESCAPES[nxt])
            i += 2
        else:
            return None
    return "".join(out)


def test_snippets(source: Path) -> list[str]:
    found: dict[str, None] = {}
    for hs in sorted((source / "src" / "ShellCheck").rglob("*.hs")):
        for line in hs.read_text(encoding="utf-8", errors="replace").splitlines():
            m = PROP_STRING.match(line)
            if m:
                text = haskell_string(m.group(1))
                if text is not None:
                    found[text + "\n"] = None
    return list(found)


def corpus_blocks(corpus: Path) -> list[str]:
    return list(dict.fromkeys(
        m.group(1) for path in sorted(corpus.glob("**/.claude/commands/**/*.md"))
        for m in re.finditer(r"```(?:bash|sh)\n(.*?)```",
                             path.read_text(encoding="utf-8", errors="replace"), re.DOTALL)))


def compare(binary: str, scripts: list[str]) -> dict[str, float]:
    exclude = tuple(BatonConfig().shellcheck_exclude)
    full, plain = Options(binary, exclude, graph=True), Options(binary, exclude, graph=False)
    found = run_many([(o, s) for s in scripts for o in (full, plain)], None)

    def reported(result: object) -> list[tuple[int, int, int]] | None:
        if not isinstance(result, list):
            return None
        return sorted((c["code"], c["line"], c["column"]) for c in result
                      if selected(c["code"], c["level"], ["default"], list(exclude)))

    differ = missed = sent = 0
    for script in scripts:
        graph = needs_graph(script)
        sent += graph
        if reported(found[(full, script)]) != reported(found[(plain, script)]):
            differ += 1
            if not graph:
                missed += 1
                print(f"  MISSED: {script[:120]!r}", flush=True)
    chars = sum(len(s) for s in scripts)
    return {"blocks": len(scripts), "differ": differ, "missed": missed, "graph": sent,
            "plain_share": sum(len(s) for s in scripts if not needs_graph(s)) / max(1, chars)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, required=True,
                        help="a koalaman/shellcheck checkout at the running version's tag")
    parser.add_argument("--corpus", type=Path, default=REPO.parent / "shared" / "corpus")
    args = parser.parse_args()
    binary = find_shellcheck()
    if binary is None:
        print("shellcheck is not installed", file=sys.stderr)
        return 2
    version = shellcheck_version(binary)
    print(f"ShellCheck {version} ({binary}); gated for the default selection: "
          f"{gated(version, ['default'])}")
    for name, scripts in (("ShellCheck's test snippets", test_snippets(args.source)),
                          ("corpus command blocks", corpus_blocks(args.corpus))):
        start = time.perf_counter()
        got = compare(binary, scripts)
        print(f"{name}: {got['blocks']} blocks, {got['differ']} report otherwise without the "
              f"graph, {got['missed']} of those missed by the gate; {got['graph']} sent to "
              f"the full analysis; {got['plain_share']:.0%} of the text runs without the graph "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
