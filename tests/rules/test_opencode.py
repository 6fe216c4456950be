"""BTN701-BTN711: OpenCode agents and commands, checked by OpenCode's rules.

The inputs are excerpts of real `.opencode/` trees (nvim, zed, ModelChecker, ProofChecker
configurations); each test says which file it comes from. Files are written into a real
workspace and checked through the index, as `baton check` does.
"""

from __future__ import annotations

from pathlib import Path

from baton_lsp.model.base import Finding, Kind
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_fix

# ModelChecker/.opencode/agent/subagents/lean-implementation-agent.md (head)
LEAN_AGENT = """---
name: lean-implementation-agent
description: Implement Lean 4 proofs following implementation plans
mode: subagent
temperature: 0.2
tools:
  read: true
  write: true
  edit: true
  glob: true
  grep: true
  bash: true
  task: false
  mcp__lean-lsp__*: true
permissions:
  read:
    "**/*": "allow"
  write:
    "specs/**/*": "allow"
    "**/*.lean": "allow"
---

# Lean Implementation Agent
"""

# ProofChecker/.opencode/agent/subagents/planner.md (head, lists shortened)
PLANNER = """---
name: "planner"
version: "1.0.0"
description: "Implementation plan creation following plan.md standard with research integration"
mode: subagent
agent_type: planning
temperature: 0.2
max_tokens: 4000
timeout: 1800
tools:
  read: true
  write: true
  bash: true
  grep: true
  glob: true
permissions:
  allow:
    - read: [".opencode/**/*", "**/*.md"]
  deny:
    - bash: ["rm -rf", "sudo"]
context_loading:
  strategy: lazy
  index: ".opencode/context/index.md"
---

# Planner
"""

# nvim/.opencode/commands/merge.md (head)
MERGE = """---
description: Create a pull/merge request for the current branch (GitHub PR or GitLab MR)
allowed-tools: Bash(git:*), Bash(gh:*), Bash(glab:*)
argument-hint: [--draft] [--assignee USER] [--label LABEL] [--reviewer USER]
---

> **COMMAND EXECUTION MODE** — You have been invoked with arguments: `$ARGUMENTS`.
"""

# nvim/.opencode/commands/fix-it.md (head): strict YAML refuses the description's colons,
# OpenCode's fallbackSanitization quotes them.
FIX_IT = """---
description: Scan files for FIX:, NOTE:, TODO:, QUESTION: tags and create structured tasks
allowed-tools: Skill
argument-hint: [PATH...]
---

> **COMMAND EXECUTION MODE** — You have been invoked with arguments: `$ARGUMENTS`.
"""

# ProofChecker/.opencode/command/convert.md (head): `name` twice in one mapping
CONVERT = """---
command: convert
description: Convert documents between formats (PDF/DOCX to Markdown, Markdown to PDF)
version: "1.0"
mode: command
temperature: 0.2
arguments:
  name: source_path
  type: string
  required: true
  description: Source file path
  name: output_path
  type: string
  required: false
---

# /convert
"""

# ModelChecker/.opencode/agent/subagents/logic-research-agent.md (head)
LOGIC = """---
name: logic-research-agent
description: Research formal mathematical logic tasks using domain context and codebase exploration
model: opus
---

# Logic Research Agent
"""

# zed/.opencode/agent/subagents/web-implementation-agent.md (head)
WEB = """---
name: web-implementation-agent
description: Implement web (Astro/Tailwind/TypeScript) changes from plans
disallowedTools: mcp__context7__*
---

# Web Implementation Agent
"""

# ProofChecker/.opencode/command/implement.md (head)
IMPLEMENT = """---
description: Execute implementation with resume support
agent: orchestrator
---

Implement $ARGUMENTS
"""

# ProofChecker/.opencode/agent/orchestrator.md (head, trimmed)
ORCHESTRATOR = """---
name: orchestrator
description: Routes commands to the right subagent
mode: primary
---

# Orchestrator
"""


def check(root: Path, files: dict[str, str], target: str) -> list[Finding]:
    (root / ".claude").mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    index = WorkspaceIndex(root, load_config(root))
    return list(check_file(index, root / target))


def codes(findings: list[Finding]) -> list[str]:
    return sorted(f.code for f in findings)


def test_an_opencode_agent_is_an_opencode_agent_not_a_claude_one(tmp_path: Path) -> None:
    """`tools:` as a map and `mode: subagent` are OpenCode's form: no Claude Code finding."""
    rel = ".opencode/agent/subagents/lean-implementation-agent.md"
    found = check(tmp_path, {rel: LEAN_AGENT}, rel)
    assert WorkspaceIndex(tmp_path).kind_of(tmp_path / rel) is Kind.OPENCODE_AGENT
    assert not [f for f in found if f.code.startswith(("BTN2", "BTN3"))]
    assert "BTN702" not in codes(found)  # the tools map and mode are valid OpenCode


def test_claude_agent_gets_no_opencode_findings(tmp_path: Path) -> None:
    """The same text under `.claude/agents/` is judged by Claude Code's rules only."""
    rel = ".claude/agents/logic-research-agent.md"
    found = check(tmp_path, {rel: LOGIC}, rel)
    assert not [f for f in found if f.code.startswith("BTN7")]


def test_btn701_unreadable_front_matter_loaded_raw(tmp_path: Path) -> None:
    """Nothing for the retry to rewrite: gray-matter's cache hands back the unparsed file,
    so OpenCode loads the command with the `---` block in its template (not skipped)."""
    rel = ".opencode/commands/merge.md"
    [f] = [f for f in check(tmp_path, {rel: MERGE}, rel) if f.code == "BTN701"]
    assert f.range.start_line == 3  # the argument-hint line
    assert "loads the command without it" in f.message


def test_btn701_fallback_sanitization_is_followed(tmp_path: Path) -> None:
    """A description with colons is read after OpenCode's retry: not reported."""
    rel = ".opencode/commands/fix-it.md"
    found = check(tmp_path, {rel: FIX_IT}, rel)
    assert "BTN701" not in codes(found)
    assert "BTN703" in codes(found)  # allowed-tools: read by the fallback, ignored by OpenCode


def test_btn701_duplicate_key_in_a_nested_mapping(tmp_path: Path) -> None:
    """js-yaml refuses a duplicated key (PyYAML would take the last one); the real file's
    `allowed_tools` line has a colon the retry rewrites, so the retry is a new text that
    fails too, and OpenCode skips the command."""
    rel = ".opencode/command/convert.md"
    text = CONVERT.replace("---\n\n# /convert", "allowed_tools: Skill, Bash(jq:*), Read\n"
                                                  "---\n\n# /convert")
    [f] = [f for f in check(tmp_path, {rel: text}, rel) if f.code == "BTN701"]
    assert "`name`" in f.message and f.range.start_line == 11
    assert "skips the command" in f.message


def test_btn702_invalid_mode(tmp_path: Path) -> None:
    rel = ".opencode/agent/convert.md"
    text = LOGIC.replace("model: opus", "mode: command")
    [f] = [f for f in check(tmp_path, {rel: text}, rel) if f.code == "BTN702"]
    assert "`mode: command`" in f.message and f.range.start_line == 3


def test_btn702_tools_as_a_claude_list(tmp_path: Path) -> None:
    rel = ".opencode/agent/reader.md"
    text = LOGIC.replace("model: opus", "tools: Read, Grep")
    [f] = [f for f in check(tmp_path, {rel: text}, rel) if f.code == "BTN702"]
    assert "map of tool ids" in f.message


def test_btn703_permissions_and_btn704_metadata(tmp_path: Path) -> None:
    rel = ".opencode/agent/subagents/planner.md"
    found = check(tmp_path, {rel: PLANNER}, rel)
    [perm] = [f for f in found if f.code == "BTN703"]
    assert "`permissions`" in perm.message and perm.range.start_line == 15
    [meta] = [f for f in found if f.code == "BTN704"]  # one per agent, the rest related
    for key in ("version", "agent_type", "max_tokens", "timeout", "context_loading"):
        assert f"`{key}`" in meta.message
    assert len(meta.related) == 4
    assert "BTN702" not in codes(found) and "BTN710" not in codes(found)


def test_btn704_is_left_to_installed_plugins(tmp_path: Path) -> None:
    """A plugin receives the resolved configuration and may read what OpenCode ignores
    (oh-my-opencode's `fallback_models`): with a `plugin` list in `opencode.json`, or a file
    in `.opencode/plugins/` (nvim's tree has one), the agent's extra keys are not reported."""
    rel = ".opencode/agent/subagents/planner.md"
    listed = check(tmp_path / "listed", {rel: PLANNER,
                                         "opencode.json": '{"plugin": ["oh-my-opencode"]}'}, rel)
    local = check(tmp_path / "local", {rel: PLANNER,
                                       ".opencode/plugins/notify.ts": "export default {}\n"}, rel)
    empty = check(tmp_path / "empty", {rel: PLANNER, "opencode.json": '{"plugin": []}'}, rel)
    assert "BTN704" not in codes(listed) and "BTN704" not in codes(local)
    assert "BTN704" in codes(empty) and "BTN703" in codes(listed)


def test_btn704_plugins_planted_as_a_fifo_or_a_link_out(tmp_path: Path) -> None:
    """A FIFO planted at `opencode.json` is not waited on, and `.opencode/plugins` linked out
    of the workspace is not listed: neither says plugins are installed, so BTN704 stands."""
    import os

    rel = ".opencode/agent/subagents/planner.md"
    outside = tmp_path / "outside"
    (outside / "plugins").mkdir(parents=True)
    (outside / "plugins" / "spy.ts").write_text("export default {}\n", encoding="utf-8")
    root = tmp_path / "ws"
    (root / ".opencode").mkdir(parents=True)
    os.mkfifo(root / "opencode.json")
    (root / ".opencode" / "plugins").symlink_to(outside / "plugins")
    assert "BTN704" in codes(check(root, {rel: PLANNER}, rel))


def test_btn703_claude_keys_on_agents_and_commands(tmp_path: Path) -> None:
    web = ".opencode/agent/subagents/web-implementation-agent.md"
    assert "`disallowedTools`" in " ".join(
        f.message for f in check(tmp_path, {web: WEB}, web) if f.code == "BTN703")
    cmd = ".opencode/command/convert.md"
    fixed = CONVERT.replace("  name: output_path\n  type: string\n  required: false\n", "")
    got = {f.message.split("`")[1] for f in check(tmp_path, {cmd: fixed}, cmd)
           if f.code == "BTN703"}
    assert got == {"mode", "temperature"}  # `command`, `version`, `arguments`: dropped quietly


def test_btn705_model_without_provider(tmp_path: Path) -> None:
    rel = ".opencode/agent/subagents/logic-research-agent.md"
    [f] = [f for f in check(tmp_path, {rel: LOGIC}, rel) if f.code == "BTN705"]
    assert "`opus`" in f.message and f.range.start_line == 3
    good = LOGIC.replace("model: opus", "model: anthropic/claude-opus-4-1")
    assert "BTN705" not in codes(check(tmp_path, {rel: good}, rel))


def test_btn706_subagent_without_description(tmp_path: Path) -> None:
    rel = ".opencode/agent/subagents/logic-research-agent.md"
    text = LOGIC.replace(
        "description: Research formal mathematical logic tasks using domain context and "
        "codebase exploration\n", "")
    assert "BTN706" in codes(check(tmp_path, {rel: text}, rel))
    primary = ".opencode/agent/orchestrator.md"
    no_desc = ORCHESTRATOR.replace("description: Routes commands to the right subagent\n", "")
    assert "BTN706" not in codes(check(tmp_path, {primary: no_desc}, primary))


def test_btn710_claude_mcp_names(tmp_path: Path) -> None:
    rel = ".opencode/agent/subagents/lean-implementation-agent.md"
    [f] = [f for f in check(tmp_path, {rel: LEAN_AGENT}, rel) if f.code == "BTN710"]
    assert "`mcp__lean-lsp__*`" in f.message
    assert (f.range.start_line, f.range.start_char) == (13, 2)
    fixed = LEAN_AGENT.replace("mcp__lean-lsp__*", "lean-lsp_*").replace("  read: true\n",
                                                                         "  Read: true\n")
    [cased] = [f for f in check(tmp_path, {rel: fixed}, rel) if f.code == "BTN710"]
    assert "`read`" in cased.message  # Claude Code's capitalised name


def test_btn711_command_agent(tmp_path: Path) -> None:
    cmd = ".opencode/command/implement.md"
    files = {cmd: IMPLEMENT, ".opencode/agent/orchestrator.md": ORCHESTRATOR}
    assert "BTN711" not in codes(check(tmp_path, files, cmd))
    missing = tmp_path / "other"
    [f] = [f for f in check(missing, {cmd: IMPLEMENT}, cmd) if f.code == "BTN711"]
    assert "`orchestrator`" in f.message


def test_btn711_agents_from_opencode_json_and_nested_paths(tmp_path: Path) -> None:
    """`opencode.json` agents and `agent/subagents/x.md` (named `subagents/x`) resolve."""
    cmd = ".opencode/commands/research.md"
    files = {
        "opencode.json": '{"agent": {"python-research": {"mode": "subagent"}}}',
        ".opencode/agent/subagents/lean.md": "---\ndescription: Lean\n---\nProve.\n",
        cmd: "---\ndescription: Research\nagent: python-research\n---\nGo.\n",
    }
    assert "BTN711" not in codes(check(tmp_path, files, cmd))
    nested = "---\ndescription: Research\nagent: subagents/lean\n---\nGo.\n"
    assert "BTN711" not in codes(check(tmp_path, {**files, cmd: nested}, cmd))
    build = "---\ndescription: Research\nagent: build\n---\nGo.\n"
    assert "BTN711" not in codes(check(tmp_path, {**files, cmd: build}, cmd))


def test_btn712_two_files_one_agent_name(tmp_path: Path) -> None:
    """ProofChecker has `agent/lean-research-agent.md` and
    `agent/subagents/lean-research-agent.md`, both `name: lean-research-agent`."""
    top = ".opencode/agent/lean-research-agent.md"
    sub = ".opencode/agent/subagents/lean-research-agent.md"
    text = "---\nname: lean-research-agent\ndescription: Research Lean 4\n---\n# R\n"
    [f] = [f for f in check(tmp_path, {top: text, sub: text}, sub) if f.code == "BTN712"]
    assert top in f.message and f.range.start_line == 1
    renamed = text.replace("name: lean-research-agent\n", "")  # named by path: they differ
    assert "BTN712" not in codes(check(tmp_path, {top: renamed, sub: renamed}, sub))


# ModelChecker/opencode.json (two of its agents; spreadsheet-agent.md does not exist)
CONFIG = """{
  "agent": {
    "python-research": {
      "prompt": "{file:.opencode/agent/subagents/python-research-agent.md}",
      "tools": {"webfetch": true, "read": true},
      "description": "Research Python development topics and libraries",
      "mode": "subagent"
    },
    "spreadsheet": {
      "mode": "subagent",
      "description": "Convert and process spreadsheet files (XLSX, CSV, etc.)",
      "prompt": "{file:.opencode/agent/subagents/spreadsheet-agent.md}"
    }
  }
}
"""


def test_btn720_missing_file_reference(tmp_path: Path) -> None:
    files = {"opencode.json": CONFIG,
             ".opencode/agent/subagents/python-research-agent.md": "# Python research\n"}
    assert WorkspaceIndex(tmp_path).kind_of(tmp_path / "opencode.json") is Kind.OPENCODE_CONFIG
    [f] = [f for f in check(tmp_path, files, "opencode.json") if f.code == "BTN720"]
    assert "spreadsheet-agent.md" in f.message and f.range.start_line == 11
    commented = CONFIG.replace('      "prompt": "{file:.opencode/agent/subagents/spreadsheet',
                               '      // "prompt": "{file:.opencode/agent/subagents/spreadsheet')
    found = check(tmp_path, {**files, "opencode.jsonc": commented}, "opencode.jsonc")
    assert not [f for f in found if f.code in ("BTN720", "BTN721")]


def test_btn721_and_btn722_config_agents(tmp_path: Path) -> None:
    broken = CONFIG.replace('"mode": "subagent"\n    },', '"mode": "subagent"\n    ')
    assert "BTN721" in codes(check(tmp_path, {"opencode.json": broken}, "opencode.json"))
    bad = CONFIG.replace('"mode": "subagent",\n      "description": "Convert',
                         '"mode": "command",\n      "description": "Convert')
    [f] = [f for f in check(tmp_path, {"opencode.json": bad}, "opencode.json")
           if f.code == "BTN722"]
    assert "`spreadsheet`" in f.message and f.range.start_line == 9
    # a command section needs its template (there is no body); `subtask` is a boolean
    commands = '{"command": {"x": {"description": "no template"}, "y": {"template": "go",' \
               ' "subtask": "yes"}}, "model": "opus"}'
    got = sorted(f.message for f in check(tmp_path, {"opencode.json": commands},
                                          "opencode.json") if f.code == "BTN722")
    assert len(got) == 3 and "`model`" in got[0] and "`template`" in got[1] \
        and "`subtask`" in got[2]


# From a public tree's .opencode/opencode.json: its context7 key is sent as typed.
MCP_CONFIG = """{
  "model": "aigateway/code---anthropic-claude-sonnet",
  "mcp": {
    "context7": {
      "type": "remote",
      "url": "https://mcp.context7.com/mcp",
      "headers": {
        "CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"
      }
    },
    "sequential-thinking": {
      "type": "local",
      "command": [
        "npx",
        "-y",
        "@modelcontextprotocol/server-sequential-thinking"
      ]
    }
  }
}
"""


def test_btn723_shell_variable_in_mcp_header(tmp_path: Path) -> None:
    [f] = [f for f in check(tmp_path, {".opencode/opencode.json": MCP_CONFIG},
                            ".opencode/opencode.json") if f.code == "BTN723"]
    assert (f.range.start_line, f.range.start_char) == (7, 29)
    assert "`{env:CONTEXT7_API_KEY}`" in f.message
    assert f.fix is not None
    fixed = apply_fix(MCP_CONFIG, f.fix)
    assert '"CONTEXT7_API_KEY": "{env:CONTEXT7_API_KEY}"' in fixed
    found = check(tmp_path, {".opencode/opencode.json": fixed}, ".opencode/opencode.json")
    assert "BTN723" not in codes(found)
    # a local server's environment is passed to its process as written too
    env = '{"mcp": {"db": {"type": "local", "command": ["db-mcp"], ' \
          '"environment": {"DB_URL": "postgres://u:${DB_PASS}@h/db"}}}}'
    [g] = [f for f in check(tmp_path, {"opencode.json": env}, "opencode.json")
           if f.code == "BTN723"]
    assert "`${DB_PASS}`" in g.message and "`environment`" in g.message


# ProofChecker/opencode.json: an agent entry that only sets tools (its agent file gives the
# description; without that file the entry is an agent of its own).
LEAN_ENTRY = """{
  "$schema": "https://opencode.ai/config.json",
  "agent": {
    "lean-research-agent": {
      "mode": "subagent",
      "tools": {
        "lean-lsp-mcp_loogle": true,
        "lean-lsp-mcp_leansearch": true
      }
    }
  }
}
"""
LEAN_FILE = """---
name: "lean-research-agent"
description: "Lean 4 library research agent with LeanExplore/Loogle/LeanSearch integration"
mode: subagent
---
Research Lean libraries.
"""


def test_btn724_config_subagent_without_description(tmp_path: Path) -> None:
    [f] = [f for f in check(tmp_path / "a", {"opencode.json": LEAN_ENTRY}, "opencode.json")
           if f.code == "BTN724"]
    assert f.range.start_line == 3 and "`lean-research-agent`" in f.message
    # the agent file of that name gives it its description: OpenCode merges the two
    files = {"opencode.json": LEAN_ENTRY,
             ".opencode/agent/subagents/lean-research-agent.md": LEAN_FILE}
    assert "BTN724" not in codes(check(tmp_path / "b", files, "opencode.json"))
    # so does the other configuration file; a primary agent is never a subagent
    files = {"opencode.json": LEAN_ENTRY, ".opencode/opencode.json":
             '{"agent": {"lean-research-agent": {"description": "Lean research"}}}'}
    assert "BTN724" not in codes(check(tmp_path / "c", files, "opencode.json"))
    primary = LEAN_ENTRY.replace('"mode": "subagent"', '"mode": "primary"')
    assert "BTN724" not in codes(check(tmp_path / "d", {"opencode.json": primary},
                                       "opencode.json"))


# nvim/.opencode/commands/plan.md, step 4's block (a real bug: `| not` inside `[ ]`)
PLAN_BLOCK = """---
description: Create a phased implementation plan for a task
---

   ```bash
   # Check if state.json status is "planned"
   current_status=$(jq -r --argjson num "$task_number" \\
     '.active_projects[] | select(.project_number == $num) | .status' \\
     specs/state.json)

   if [ "$current_status" = "planned" | not ]; then
       echo "WARNING: state.json status is '$current_status', expected 'planned'."
       bash .opencode/scripts/update-task-status.sh postflight "$task_number" plan
   fi
   ```
"""


def test_btn330_shellcheck_on_opencode_command_scripts(tmp_path: Path) -> None:
    """ShellCheck runs on an OpenCode command's blocks under the same convention as on
    Claude Code's: a block that sources the project's `.opencode/` library is a script."""
    rel = ".opencode/commands/plan.md"
    assert "BTN330" not in codes(check(tmp_path, {rel: PLAN_BLOCK}, rel))  # an example?
    script = PLAN_BLOCK.replace("   # Check if", "   source .opencode/scripts/lib.sh\n"
                                                "   # Check if")
    [f] = [f for f in check(tmp_path, {rel: script}, rel) if f.code == "BTN330"]
    assert f.message.startswith("SC1073") and f.range.start_line == 11  # the `if` line
    (tmp_path / ".claude/baton.toml").write_text('shellcheck = "all"\n')
    assert "BTN330" in codes(check(tmp_path, {rel: PLAN_BLOCK}, rel))


# ModelChecker/.opencode/commands/revise.md, step 3 (there is no task-expander agent)
REVISE = """---
description: Create new version of implementation plan, or update task description
---

      3. Invoke target agent via task tool
         if [ "$plan_exists" = true ]; then
              task(
                subagent_type="planner-agent",
                prompt="Revise implementation plan for task ${task_number}: ${reason}.",
              )
         else
              task(
                subagent_type="task-expander",
                prompt="Update task ${task_number} description. New description: ${reason}.",
              )
         fi
"""


def test_btn713_task_tool_agent(tmp_path: Path) -> None:
    rel = ".opencode/commands/revise.md"
    files = {rel: REVISE, ".opencode/agent/subagents/planner-agent.md":
             "---\nname: planner-agent\ndescription: Create phased plans\n---\n# Planner\n"}
    [f] = [f for f in check(tmp_path, files, rel) if f.code == "BTN713"]
    assert "`task-expander`" in f.message
    assert (f.range.start_line, f.range.start_char) == (12, 31)
    placeholder = REVISE.replace('"task-expander"', '"{target_agent}"')
    assert "BTN713" not in codes(check(tmp_path, {**files, rel: placeholder}, rel))


def test_front_matter_past_batons_limits_is_not_judged(tmp_path: Path) -> None:
    """js-yaml expands aliases, Baton never does: such front matter is not called
    unreadable, and the agent still counts (by Baton's own reading of `name`)."""
    agent = ".opencode/agent/subagents/planner.md"
    text = ("---\nname: planner\ndescription: Plans\ndefaults: &d {strategy: lazy}\n"
            "context_loading: *d\n---\n# Planner\n")
    cmd = ".opencode/commands/plan.md"
    files = {agent: text, cmd: "---\ndescription: Plan\nagent: planner\n---\nGo\n"}
    assert not [f for f in check(tmp_path, files, agent) if f.code.startswith("BTN7")]
    assert "BTN711" not in codes(check(tmp_path, files, cmd))


def test_yes_and_on_are_strings_to_opencode(tmp_path: Path) -> None:
    """js-yaml reads `yes`/`on` as strings (YAML 1.2), PyYAML as booleans: OpenCode takes
    `description: yes` and refuses `hidden: on`."""
    rel = ".opencode/agent/a.md"
    [f] = [f for f in check(tmp_path, {rel: "---\ndescription: yes\nhidden: on\n---\nGo\n"},
                            rel) if f.code == "BTN702"]
    assert "`hidden`" in f.message


def test_btn710_custom_tools_and_links_out(tmp_path: Path) -> None:
    """A tool defined in `.opencode/tool/` is known; a tool directory linked out of the
    workspace is not listed (its names say nothing about this workspace)."""
    rel = ".opencode/agent/a.md"
    text = "---\ndescription: A\ntools:\n  greps: true\n---\nGo\n"
    ws = tmp_path / "ws"
    [f] = [f for f in check(ws, {rel: text}, rel) if f.code == "BTN710"]
    assert "`grep`" in f.message  # a near miss of a built-in, and no custom tool of its name
    (ws / ".opencode/tool").mkdir(parents=True)
    (ws / ".opencode/tool/greps.ts").write_text("export default {}\n")
    assert "BTN710" not in codes(check(ws, {rel: text}, rel))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "greps.ts").write_text("export default {}\n")
    other = tmp_path / "other"
    (other / ".opencode").mkdir(parents=True)
    (other / ".opencode/tool").symlink_to(outside)
    assert "BTN710" in codes(check(other, {rel: text}, rel))


def test_btn720_looks_only_inside_the_workspace(tmp_path: Path) -> None:
    text = ('{"agent": {"a": {"prompt": "{file:../../outside.md}"},'
            ' "b": {"prompt": "{file:~/p.md}"}}}')
    found = check(tmp_path / "ws", {"opencode.json": text}, "opencode.json")
    assert "BTN720" not in codes(found)


# A mode file (from a public tree's `.opencode/mode/code-qa.md`, shortened; quoted lines kept).
CODE_QA = """---
description: "Code QA Workflow - Automated Code Quality Assurance"
model: qwen-coder/Qwen3-Coder-Next-FP8
mode: all
color: "#E74C3C"
---

You are the Code QA Workflow Orchestrator.

### STEP 1: Environment Setup (User Input Required)
- subagent_type = env-setup
- description = Environment setup check
"""


def test_a_mode_file_is_checked_as_an_agent(tmp_path: Path) -> None:
    """`.opencode/mode/*.md` holds agents in the agent schema (OpenCode's `loadMode`): the
    same front-matter findings as `.opencode/agent/`, and the file alone makes the
    `.opencode/` a workspace. Unchecked before: no finding at all."""
    rel = ".opencode/mode/code-qa.md"
    assert "BTN702" not in codes(check(tmp_path, {rel: CODE_QA}, rel))
    bad = CODE_QA.replace("model: qwen-coder/Qwen3-Coder-Next-FP8", "model: opus")
    bad = bad.replace('color: "#E74C3C"', "color: crimson")
    found = codes(check(tmp_path, {rel: bad}, rel))
    assert "BTN705" in found and "BTN702" in found
    assert WorkspaceIndex(tmp_path).kind_of(tmp_path / rel) is Kind.OPENCODE_AGENT


def test_a_mode_is_a_primary_agent_named_by_its_file(tmp_path: Path) -> None:
    """A mode needs no description (OpenCode forces `mode: primary`, so the task tool never
    lists it), a command may name it as its agent, and a mode of an agent's name is merged
    into that agent, not a duplicate of it."""
    rel = ".opencode/modes/code-qa.md"
    no_desc = CODE_QA.replace('description: "Code QA Workflow - Automated Code Quality '
                              'Assurance"\n', "")
    assert "BTN706" not in codes(check(tmp_path, {rel: no_desc}, rel))
    cmd = ".opencode/command/qa.md"
    files = {rel: CODE_QA, cmd: "---\ndescription: Run QA\nagent: code-qa\n---\nGo.\n"}
    assert "BTN711" not in codes(check(tmp_path, files, cmd))
    agent = ".opencode/agent/code-qa.md"
    both = {rel: CODE_QA, agent: CODE_QA.replace("mode: all", "mode: subagent")}
    assert "BTN712" not in codes(check(tmp_path, both, rel))
    two = {rel: CODE_QA, ".opencode/mode/qa.md": CODE_QA.replace(
        "description:", "name: code-qa\ndescription:")}
    assert "BTN712" in codes(check(tmp_path, two, rel))
