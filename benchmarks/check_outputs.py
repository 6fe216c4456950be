"""`baton check --format json` of every known tree, saved so that two versions can be compared.

Run: `python benchmarks/check_outputs.py save DIR [--server SERVER_DIR] [--tree TREE ...]`, then
`python benchmarks/check_outputs.py compare DIR_A DIR_B`.

A speed change must not change what a check reports. `save` runs `baton check --format json`
with ShellCheck at its default (`auto`) and off on each tree (default: the shared corpus, every
tree under `../unseen/` and under `~/.cache/baton-author-trees/`), each time with a new empty
result cache so that every file is really checked, and writes stdout and the exit code per
tree and mode. `--server` runs another checkout's `server/` through `PYTHONPATH` (a baseline).
`compare` exits 1 and names every file that differs byte for byte.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODES = {"auto": [], "off": ["--no-shellcheck"]}
TIMEOUT_S = 900


def default_trees() -> list[Path]:
    trees = [REPO.parent / "shared" / "corpus"]
    for parent in (REPO.parent / "unseen", Path.home() / ".cache" / "baton-author-trees"):
        if parent.is_dir():
            trees.extend(sorted(p for p in parent.iterdir() if p.is_dir()))
    return [t for t in trees if t.is_dir()]


def save(out: Path, trees: list[Path], server: Path | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if server is not None:
        env["PYTHONPATH"] = str(server)
    for tree in trees:
        for mode, flags in MODES.items():
            with tempfile.TemporaryDirectory(prefix="baton-outputs-cache-") as cache:
                proc = subprocess.run(
                    [sys.executable, "-m", "baton_lsp", "check", "--format", "json", *flags,
                     str(tree)], env={**env, "BATON_CACHE_DIR": cache}, capture_output=True,
                    timeout=TIMEOUT_S, check=False)
            name = f"{tree.parent.name}--{tree.name}--{mode}"
            (out / f"{name}.json").write_bytes(proc.stdout)
            (out / f"{name}.exit").write_text(f"{proc.returncode}\n")
            print(f"{name}: exit {proc.returncode}, {len(proc.stdout)} bytes", flush=True)


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ = [n for n in names
              if not (a / n).is_file() or not (b / n).is_file()
              or (a / n).read_bytes() != (b / n).read_bytes()]
    for n in differ:
        print(f"differs: {n}")
    print(f"{len(names) - len(differ)} of {len(names)} files identical")
    return 1 if differ else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_save = sub.add_parser("save", help="check every tree and save the outputs in DIR")
    p_save.add_argument("dir", type=Path)
    p_save.add_argument("--server", type=Path, help="another checkout's server/ directory")
    p_save.add_argument("--tree", type=Path, action="append", help="a tree (repeatable)")
    p_cmp = sub.add_parser("compare", help="exit 1 unless two saved directories are identical")
    p_cmp.add_argument("a", type=Path)
    p_cmp.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "compare":
        return compare(args.a, args.b)
    trees = args.tree or default_trees()
    missing = [t for t in trees if not t.is_dir()]
    if missing:
        parser.error(f"not a directory: {missing[0]}")
    save(args.dir, trees, args.server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
