"""First start of the server bundled in the VS Code extension against the pip-installed one.

    python benchmarks/bench_bundled.py [--runs 5] [--cold 3]

Spawn → first publishDiagnostics of the example workspace's plan, as the extension starts each
server: the bundled one with a bare Python (a venv without pip) as `python -I
bundled/tool/baton_bootstrap.py -m baton_lsp lsp`, the pip-installed one as `python -m
baton_lsp lsp` from this repository's venv. *Cold*: a fresh copy of `client-vscode/bundled`
with no `__pycache__` (the first start after installing the .vsix, which compiles and writes
the `.pyc` files); *warm*: the same copy afterwards. Build the bundle first (`npm run
package`, or `python client-vscode/scripts/bundle_libs.py`).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_lsp import Client  # type: ignore[import-not-found]  # noqa: E402

BUNDLED = REPO / "client-vscode" / "bundled"
PLAN = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"


def first_diagnostics(command: list[str], root: Path) -> float:
    """ms from spawn to the first publishDiagnostics of the plan, one fresh server."""
    c = Client(root, {}, command=command)
    c.initialize()
    plan = root / PLAN
    uri = plan.as_uri()
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "markdown", "version": 1,
        "text": plan.read_text(encoding="utf-8")}})
    c.wait_diagnostics(uri)
    elapsed = (time.perf_counter() - c.t0) * 1000
    c.close()
    return elapsed


def fresh_bundle(dest: Path) -> Path:
    shutil.copytree(BUNDLED, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest / "tool" / "baton_bootstrap.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="warm starts of each server")
    parser.add_argument("--cold", type=int, default=3, help="first starts of a fresh bundle")
    args = parser.parse_args()
    if not (BUNDLED / "libs" / "common").is_dir():
        raise SystemExit("no client-vscode/bundled/libs: run `npm run package` first")
    with tempfile.TemporaryDirectory(prefix="bench-bundled-") as tmp_name:
        tmp = Path(tmp_name)
        ws = tmp / "ws"
        shutil.copytree(REPO / "examples" / "workspace", ws)
        bare = tmp / "bare"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
        python = str(bare / "bin" / "python")
        installed = [sys.executable, "-m", "baton_lsp", "lsp", "--log-level", "WARNING"]
        first_diagnostics(installed, ws)  # its .pyc exist, as after `pip install`
        cold = []
        for i in range(args.cold):
            boot = fresh_bundle(tmp / f"bundle-{i}")
            cold.append(first_diagnostics(
                [python, "-I", str(boot), "-m", "baton_lsp", "lsp", "--log-level", "WARNING"],
                ws))
        bundled = [python, "-I", str(tmp / "bundle-0" / "tool" / "baton_bootstrap.py"), "-m",
                   "baton_lsp", "lsp", "--log-level", "WARNING"]
        warm: list[float] = []
        pip: list[float] = []
        for _ in range(args.runs):  # alternately, so load drifts hit both alike
            warm.append(first_diagnostics(bundled, ws))
            pip.append(first_diagnostics(installed, ws))
    med = statistics.median
    print(f"bundled, cold (fresh copy, writes .pyc): median {med(cold):.0f} ms "
          f"({', '.join(f'{v:.0f}' for v in cold)})")
    print(f"bundled, warm: median {med(warm):.0f} ms (min {min(warm):.0f}, max {max(warm):.0f})")
    print(f"pip-installed (repo venv): median {med(pip):.0f} ms "
          f"(min {min(pip):.0f}, max {max(pip):.0f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
