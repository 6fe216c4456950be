"""A small workspace whose findings depend on other files (an agent a command's Task names,
a report a plan links to), for the result cache's and the replay's tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

AGENT = ("---\nname: research-specialist\ndescription: r\n---\n\n# Research Specialist\n\n"
         "## STEP 4\n\nReturn exactly:\n\nREPORT_CREATED: /abs/path\n")
COMMAND = (
    "---\ndescription: d\n---\n\n# /deploy\n\n"
    "Task {\n"
    '  subagent_type: "general-purpose"\n'
    '  description: "Research things"\n'
    '  prompt: "\n'
    "    Read and follow ALL behavioral guidelines from:\n"
    "    ${CLAUDE_PROJECT_DIR}/.claude/agents/research-specialist.md\n"
    "\n"
    "    Return: REPORT_CREATED: <path>\n"
    "    On failure: TASK_ERROR: <type> - <message>\n"
    '  "\n'
    "}\n"
)
PLAN = ("# Plan\n\n## Metadata\n- **Date**: 2025-12-02\n- **Feature**: Login\n"
        "- **Standards File**: /repo/CLAUDE.md\n- **Research Reports**: "
        "[report](../reports/001_report.md)\n\n### Phase 1: Setup [NOT STARTED]\n"
        "dependencies: []\n\n- [ ] Read [the report](../reports/001_report.md)\n")
PLAN_PATH = ".claude/specs/001_x/plans/001-plan.md"
REPORT_PATH = ".claude/specs/001_x/reports/001_report.md"


def run_baton(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if cache is not None:
        env["BATON_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "baton_lsp", *args], capture_output=True,
                          text=True, timeout=300, check=False, env=env)


def make_tree(root: Path) -> Path:
    for rel, text in {".claude/agents/research-specialist.md": AGENT,
                      ".claude/commands/deploy.md": COMMAND,
                      PLAN_PATH: PLAN, REPORT_PATH: "# Report\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root
