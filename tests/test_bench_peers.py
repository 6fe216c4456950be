"""`benchmarks/bench_peers.py` maps each tool's JSON to (file, line, class) and finds what only
one tool reports. The outputs below are cut from real runs of agnix 0.59.3, skilllint 1.21.4 and
`baton check --format json` on a public tree (the shared corpus)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_peers  # type: ignore[import-not-found]  # noqa: E402

TREE = Path("/trees/corpus")
AGENT = "other/EvanLavender13__audio-jones/.claude/agents/plan-architect.md"

AGNIX = {"version": "0.59.3", "files_checked": 1, "diagnostics": [
    {"level": "error", "rule": "CC-AG-009", "file": f"{TREE}/{AGENT}", "line": 1, "column": 1,
     "message": "Unknown tool 'BashOutput' in tools list. Known tools: Agent, Artifact"},
    {"level": "warning", "rule": "REF-001", "file": f"{TREE}/.claude/docs/a.md", "line": 34,
     "column": 5, "message": "Import target not found: @.claude/command/review.md"},
    {"level": "warning", "rule": "REF-001", "file": f"{TREE}/CLAUDE.md", "line": 3,
     "column": 1, "message": "Absolute import paths not allowed: @~/.claude/x.md"}]}
BATON = [{"code": "BTN206", "rule": "agent-unknown-tool", "severity": "warning",
          "message": "tool `BashOutput` in `tools` was removed from Claude Code in 2.0.64",
          "filename": f"{TREE}/{AGENT}", "location": {"line": 14, "column": 88}}]
SKILLLINT = {"command": "check", "files": [{"path": f"{TREE}/.claude/agents/x.md", "validators": [
    {"name": "FrontmatterValidator", "issues": [
        {"field": "model", "severity": "error", "code": "FM006", "line": None,
         "message": "Invalid value. Must be one of: 'sonnet', 'opus', 'haiku' or 'inherit'"},
        {"field": "(file)", "severity": "error", "code": "FM003", "line": None,
         "message": "No YAML frontmatter found"}]}]}]}


def test_outputs_map_to_file_line_and_class() -> None:
    agnix = bench_peers.parse_agnix(TREE, json.dumps(AGNIX))
    assert [(f.file, f.line, f.kind) for f in agnix] == [
        (AGENT, 1, "agent-tool-unknown"), (".claude/docs/a.md", 34, "import-missing"),
        ("CLAUDE.md", 3, "agnix:REF-001")]
    (baton,) = bench_peers.parse_baton(TREE, json.dumps(BATON))
    assert (baton.file, baton.line, baton.kind) == (AGENT, 14, "agent-tool-unknown")
    lint = bench_peers.parse_skilllint(TREE, json.dumps(SKILLLINT))
    assert [(f.line, f.kind) for f in lint] == [(None, "agent-model-invalid"),
                                                (None, "frontmatter-missing")]


def test_a_front_matter_finding_on_line_one_is_the_same_defect_as_on_its_key_line() -> None:
    """agnix reports front-matter findings on line 1, Baton on the key's line: one defect."""
    found = [*bench_peers.parse_agnix(TREE, json.dumps(AGNIX)),
             *bench_peers.parse_baton(TREE, json.dumps(BATON))]
    alone = bench_peers.only(found)
    assert "baton" not in alone
    assert [f.file for f in alone["agnix"]] == [".claude/docs/a.md", "CLAUDE.md"]
