"""Judge every OpenCode finding (BTN7xx) Baton reports on real trees against OpenCode itself.

    python benchmarks/opencode_fidelity.py TREE...            # TSV of every finding, judged
    python benchmarks/opencode_fidelity.py --summary TREE...  # per-rule counts

For each tree, its `.opencode/agent(s)`, `.opencode/command(s)` and `opencode.json` are
copied into a scratch git repository and the pinned `opencode` binary
(scripts/install-agent-clis.sh) prints the configuration it resolves (`opencode debug config
--pure`, offline, with a scratch HOME). A finding is judged true when OpenCode's resolved
configuration shows what the finding says: a file loaded without its front matter or not at
all (BTN701), a key kept only as a model option or dropped (BTN703, BTN704), a model without
a provider (BTN705), an agent name defined twice or missing (BTN712, BTN713), a refused
configuration (BTN720). BTN710 (Claude Code's MCP naming) is judged by OpenCode's source:
the resolved configuration does not show tool matching.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.agents.clis import AGENTS_DIR, opencode_offline_env

from baton_lsp.model.base import Kind
from baton_lsp.model.opencode import BUILTIN_AGENTS, OpenCodeAgent, OpenCodeCommand
from baton_lsp.parse import parse_text

OPENCODE = os.environ.get("BATON_OPENCODE") or str(AGENTS_DIR / "node_modules/.bin/opencode")
COPIED = (".opencode/agent", ".opencode/agents", ".opencode/command", ".opencode/commands")


def resolved(tree: Path, scratch: Path, with_config: bool = True) -> tuple[dict[str, Any], str]:
    """OpenCode's resolved configuration of `tree`'s OpenCode files, and its error (if it
    refused the configuration)."""
    work = scratch / tree.name / ("with" if with_config else "without")
    for rel in COPIED:
        if (tree / rel).is_dir():
            shutil.copytree(tree / rel, work / rel, symlinks=True)
    work.mkdir(parents=True, exist_ok=True)
    if with_config and (tree / "opencode.json").is_file():
        shutil.copy(tree / "opencode.json", work / "opencode.json")
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    env = opencode_offline_env(scratch / "home")
    out = scratch / f"{tree.name}.config.json"
    with out.open("w", encoding="utf-8") as sink:  # a pipe loses the end of a long answer
        done = subprocess.run([OPENCODE, "debug", "config", "--pure"], cwd=work, env=env,
                              stdout=sink, stderr=subprocess.PIPE, text=True, timeout=600)
    if done.returncode != 0:
        return {}, done.stderr
    return json.loads(out.read_text(encoding="utf-8")), ""


def findings(tree: Path) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--format", "json",
                           "--no-cache", "--exit-zero", str(tree)],
                          capture_output=True, text=True, timeout=1800, check=True)
    return [f for f in json.loads(done.stdout) if f["code"].startswith("BTN7")]


def judge(tree: Path, found: dict[str, Any], config: dict[str, Any],
          refusal: str) -> tuple[bool, str]:
    """(true?, reason) for one finding, from OpenCode's resolved configuration."""
    code, msg, path = found["code"], found["message"], Path(found["filename"])
    doc: Any = None
    loaded: dict[str, Any] | None = None
    if path.suffix == ".md":
        kind = Kind.OPENCODE_AGENT if "/.opencode/agent" in str(path) else Kind.OPENCODE_COMMAND
        doc = parse_text(kind, path.read_text(encoding="utf-8"), str(path))
        if isinstance(doc, OpenCodeAgent):
            loaded = config.get("agent", {}).get(doc.agent_name)
        elif isinstance(doc, OpenCodeCommand):
            loaded = config.get("command", {}).get(doc.command_name)
    is_agent = isinstance(doc, OpenCodeAgent)
    if code == "BTN701":
        if doc.load.raw:
            body = (loaded or {}).get("prompt" if is_agent else "template", "")
            return (loaded is not None and body.startswith("---")
                    and "description" not in loaded,
                    "OpenCode loads it without front matter (the --- block in its text)")
        return loaded is None, "OpenCode does not load it"
    if code == "BTN703":
        key = msg.split("`")[1]
        if is_agent:
            return (loaded is not None and key in loaded.get("options", {}),
                    f"OpenCode keeps `{key}` only as a model option")
        return loaded is not None and key not in loaded, f"OpenCode's command has no `{key}`"
    if code == "BTN704":
        keys = re.findall(r"`([^`]+)`", msg.split(":")[0])
        return (loaded is not None and all(k in loaded.get("options", {}) for k in keys),
                "every named key is a model option in OpenCode's agent")
    if code == "BTN705":
        model = (loaded or {}).get("model", "")
        return (loaded is not None and "/" not in model,
                f"OpenCode keeps model `{model}`, which has no provider")
    if code == "BTN710":
        return True, "OpenCode names MCP tools `<server>_<tool>` (source: mcp/index.ts)"
    if code == "BTN712":
        return (loaded is not None,
                "OpenCode's agents are a map by name: it resolves one of the two files")
    if code == "BTN713":
        name = msg.split("`")[1]
        return (name not in config.get("agent", {}) and name not in BUILTIN_AGENTS,
                f"OpenCode resolves no agent `{name}`")
    if code == "BTN720":
        return "bad file reference" in refusal, "OpenCode refuses the configuration"
    return False, "not judged by this script"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--summary", action="store_true", help="per-rule counts only")
    args = parser.parse_args()
    if not os.access(OPENCODE, os.X_OK):
        print(f"no opencode binary at {OPENCODE}: run scripts/install-agent-clis.sh",
              file=sys.stderr)
        return 2
    counts: Counter[tuple[str, bool]] = Counter()
    with tempfile.TemporaryDirectory(prefix="baton-opencode-") as tmp:
        scratch = Path(tmp)
        for tree in args.trees:
            tree = tree.resolve()
            full, refusal = resolved(tree, scratch)
            config = full if not refusal else resolved(tree, scratch, with_config=False)[0]
            for found in findings(tree):
                ok, reason = judge(tree, found, config, refusal)
                counts[(found["code"], ok)] += 1
                if not args.summary:
                    rel = Path(found["filename"]).relative_to(tree.parent)
                    print(f"{rel}:{found['location']['line']}\t{found['code']}\t"
                          f"{'true' if ok else 'false'}\t{reason}")
    if args.summary:
        for code in sorted({c for c, _ in counts}):
            true, false = counts[(code, True)], counts[(code, False)]
            print(f"{code}\t{true + false}\t{true}\t{false}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
