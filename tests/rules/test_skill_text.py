"""BTN230 against the real `claude` (2.1.331): a Skill tool call with arguments, answered by
the fake Anthropic API, shows the skill text as the model receives it. Texts from public
trees."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from baton_lsp.model.base import Finding
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.index import WorkspaceIndex
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import FakeAnthropic, Recorded, Reply, Text, ToolUse
from tests.helpers import apply_fix

CLAUDE = cli_path("claude")

# skill-orchestrate/SKILL.md and skill-zulip/SKILL.md of two public trees, abridged.
SKILL = """---
name: skill-orchestrate
description: Orchestrate a task's phases
---

## Stage 5a: Drift Inspection Function

```bash
invoke_drift_inspection() {
  local task_number="$1"
  local plan_path="$2"
  local session_id="$3"
}
```

```bash
url=$(echo "$ARGUMENTS" | awk '{print $1}')
output_path=$(echo "$ARGUMENTS" | awk 'NF>=2{print $2}')
```

Usage: `$1` is the task number (prose: not reported).

```bash
fixed() {
  local task_number="${1}"
}
awk '{print $(1)}' list.txt
```
"""


def test_reported_parameters_are_the_ones_claude_rewrites(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    skill = ws / ".claude" / "skills" / "skill-orchestrate" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    home.mkdir()
    skill.write_text(SKILL, encoding="utf-8")
    index = WorkspaceIndex(ws, load_config(ws))
    found = [(f.range.start_line + 1, f.message.split("`")[1])
             for f in check_file(index, skill) if f.code == "BTN230"]
    # one per function (its first `$N`), each `$N` of an awk program
    assert found == [(10, "$1"), (17, "$1"), (18, "$2")]

    def respond(req: Recorded) -> Reply:
        if not req.last_tool_results():
            return ToolUse("Skill", {"skill": "skill-orchestrate",
                                     "args": "https://x.zulipchat.com/t out.json third"})
        return Text("done")

    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    api = FakeAnthropic(respond)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "test-key",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    with api:
        proc = subprocess.run([CLAUDE, "-p", "go", "--allowedTools", "Skill"], cwd=ws,
                              capture_output=True, text=True, timeout=300, check=False,
                              env={**env, "ANTHROPIC_BASE_URL": api.url})
        assert proc.returncode == 0, proc.stderr
        seen = json.dumps(api.messages[-1].body)
    assert 'local task_number=\\"out.json\\"' in seen  # the reported `$1`, rewritten
    assert "awk '{print out.json}'" in seen and "awk 'NF>=2{print third}'" in seen
    assert 'local task_number=\\"${1}\\"' in seen and "awk '{print $(1)}'" in seen


# A public tree's skill that is given no arguments (model-invoked, no `$ARGUMENTS`, no
# `argument-hint`): nothing is replaced, so its awk `$1` is left alone.
UPGRADE = """---
name: gstack-upgrade
version: 1.1.0
description: |
  Upgrade gstack to the latest version.
allowed-tools:
  - Bash
---

```bash
if [ -f "$_SNOOZE_FILE" ]; then
  _SNOOZED_VER=$(awk '{print $1}' "$_SNOOZE_FILE")
fi
```
"""

MEMORY = """---
name: skill-memory
description: Create and maintain memories
---

```
1. Generate semantic slug from topic and title:

   generate_slug() {
     local topic="$1"
     local title="$2"
   }
```
"""


def _found(ws: Path, rel: str) -> list[int]:
    index = WorkspaceIndex(ws, load_config(ws))
    return [f.range.start_line + 1 for f in check_file(index, ws / rel) if f.code == "BTN230"]


def test_only_skills_given_arguments(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    files = {".claude/skills/gstack-upgrade/SKILL.md": UPGRADE,
             ".claude/skills/skill-memory/SKILL.md": MEMORY}
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text, encoding="utf-8")
    assert _found(ws, ".claude/skills/gstack-upgrade/SKILL.md") == []
    assert _found(ws, ".claude/skills/skill-memory/SKILL.md") == []
    # the tree's /learn command passes it arguments (a public tree's delegation block)
    learn = ws / ".claude/commands/learn.md"
    learn.parent.mkdir(parents=True)
    learn.write_text('---\ndescription: Learn\n---\n\n<input>\n  - skill: "skill-memory"\n'
                     '  - args: "mode=task, task_number={task_number}"\n</input>\n')
    assert _found(ws, ".claude/skills/skill-memory/SKILL.md") == [10]
    assert _found(ws, ".claude/skills/gstack-upgrade/SKILL.md") == []


# -- BTN231 `agent` without `context: fork` --------------------------------------------------

# A public tree's skill head, with its `context: fork` line taken out (the defect injected).
PATENT = """---
name: patent-fetch
description: "Fetch complete patent details from Google Patents including title, abstract, \
claims, description, images, assignee, filing dates, and legal status."
metadata:
  author: sonesuke
  version: 1.0.0
agent: general-purpose
---

# Patent Fetch

Fetch detailed patent information by patent ID from Google Patents using the \
google-patent-cli MCP server.
"""
PROMPT = "fetch patent US1234567 please"


def _btn231(ws: Path, text: str) -> list[Finding]:
    skill = ws / ".claude" / "skills" / "patent-fetch" / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(text, encoding="utf-8")
    index = WorkspaceIndex(ws, load_config(ws))
    return [f for f in check_file(index, skill) if f.code == "BTN231"]


def _skill_requests(tmp_path: Path, ws: Path) -> list[str]:
    """Every request the pinned claude sends that carries the skill's text, as JSON."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)

    def respond(req: Recorded) -> Reply:
        if "Fetch detailed patent" in json.dumps(req.body) or req.last_tool_results():
            return Text("done")
        return ToolUse("Skill", {"skill": "patent-fetch"})

    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    api = FakeAnthropic(respond)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "test-key",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    with api:
        proc = subprocess.run([CLAUDE, "-p", PROMPT, "--allowedTools", "Skill"], cwd=ws,
                              capture_output=True, text=True, timeout=300, check=False,
                              env={**env, "ANTHROPIC_BASE_URL": api.url})
        assert proc.returncode == 0, proc.stderr
        seen = [json.dumps(m.body) for m in api.messages]
    return [s for s in seen if "Fetch detailed patent" in s]


def test_btn231_agent_without_fork_runs_inline(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    [f] = _btn231(ws, PATENT)
    assert f.range.start_line == 6 and "`agent: general-purpose`" in f.message
    assert f.fix is not None
    fixed = apply_fix(PATENT, f.fix)
    assert "agent: general-purpose\ncontext: fork\n---" in fixed
    # what claude does with each: inline, the skill's text joins the user's conversation;
    # forked, it is the first message of a subagent's own conversation
    inline = _skill_requests(tmp_path, ws)
    assert inline and all(PROMPT in s for s in inline)
    fork_ws = tmp_path / "fork"
    assert _btn231(fork_ws, fixed) == []
    forked = _skill_requests(tmp_path, fork_ws)
    assert forked and PROMPT not in forked[0]


def test_btn231_a_skill_that_spawns_its_agent_itself(tmp_path: Path) -> None:
    # a public tree's skill-meta: `agent:` notes the target its own Agent call spawns
    text = ("---\nname: skill-meta\ndescription: Interactive system builder. Invoke for /meta "
            "command to create tasks for .claude/ system changes.\nallowed-tools: Agent, Bash, "
            "Edit, Read, Write\nagent: meta-builder-agent\n---\n\n# Meta Skill\n\nThin wrapper "
            "that delegates system building to `meta-builder-agent` subagent.\n\n"
            "  - subagent_type: \"meta-builder-agent\"\n")
    assert _btn231(tmp_path / "ws", text) == []
    other = text.replace("agent: meta", "context: forked\nagent: meta").replace(
        "`meta-builder-agent` subagent", "its subagent").replace(
        "  - subagent_type: \"meta-builder-agent\"\n", "")
    [f] = _btn231(tmp_path / "other", other)
    assert "`context: forked`" in f.message and f.fix is None
