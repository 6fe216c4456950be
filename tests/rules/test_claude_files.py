"""`.mcp.json` (BTN820-BTN823) and instruction-file imports (BTN830-BTN833), checked against
the real `claude` binary (2.1.331): `claude mcp list` prints which project servers it skips
and why, and a `claude -p` run against the fake Anthropic API shows which imported files
reach the model. Texts are excerpts of real trees (from public trees)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from pathlib import Path

from baton_lsp.model.base import Kind
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.discovery import classify, walk
from baton_lsp.workspace.index import WorkspaceIndex
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import FakeAnthropic, reply_text

CLAUDE = cli_path("claude")


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _check(root: Path, rel: str, prefix: str) -> list:
    index = WorkspaceIndex(root, load_config(root))
    return [f for f in check_file(index, root / rel) if f.code.startswith(prefix)]


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
            "HOME": str(home), "TMPDIR": str(home.parent),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            **extra}


def test_kinds_of_the_new_files(tmp_path: Path) -> None:
    assert classify(".mcp.json") is Kind.MCP_CONFIG
    assert classify("CLAUDE.md") is Kind.MEMORY
    assert classify(".claude/CLAUDE.md") is Kind.MEMORY
    assert classify("docs/api/CLAUDE.md") is Kind.MEMORY
    assert classify(".claude/rules/lean4.md") is Kind.MEMORY
    assert classify(".claude/rules/team/style.md") is Kind.MEMORY
    assert classify(".claude/agents/CLAUDE.md") is Kind.AGENT  # an agent's name, not memory
    assert classify("sub/.mcp.json") is None  # only the root's is read
    _write(tmp_path, {".claude/rules/a.md": "x\n", "CLAUDE.md": "x\n", ".mcp.json": "{}\n",
                      ".claude/CLAUDE.md": "x\n"})
    found = {p.relative_to(tmp_path).as_posix(): k for p, k in walk(tmp_path)}
    assert found == {".claude/rules/a.md": Kind.MEMORY, "CLAUDE.md": Kind.MEMORY,
                     ".mcp.json": Kind.MCP_CONFIG, ".claude/CLAUDE.md": Kind.MEMORY}


# ProofChecker/.mcp.json, abridged: one live server, planned ones under a key Claude Code
# does not read.
PROOFCHECKER_MCP = """{
  "_note": "This file documents MCP server configuration for the project.",
  "mcpServers": {
    "lean-lsp": {
      "type": "stdio",
      "command": "uvx",
      "args": ["lean-lsp-mcp"],
      "env": {
        "LEAN_LOG_LEVEL": "WARNING",
        "LEAN_PROJECT_PATH": "/home/benjamin/Projects/ProofChecker"
      }
    }
  },
  "_future_servers": {
    "lean-explore": {
      "_placeholder_config": {
        "type": "stdio",
        "command": "lean-explore-mcp",
        "args": ["--project", "/home/benjamin/Documents/Philosophy/Projects/ProofChecker"]
      }
    }
  }
}
"""


def test_mcp_home_path_in_a_real_file(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    _write(tmp_path, {".mcp.json": PROOFCHECKER_MCP})
    got = _check(tmp_path, ".mcp.json", "BTN82")
    assert [(f.code, f.range.start_line + 1) for f in got] == [("BTN823", 10)]
    assert "/home/benjamin/" in got[0].message


BAD_SERVERS = {
    "good": {"command": "npx", "args": ["-y", "docs-mcp"], "extra": 1,
             "env": {"TOKEN": "${DOCS_TOKEN:-none}"}},
    "bogus": {"type": "websocket", "url": "ws://127.0.0.1:9/x"},
    "no-type": {"url": "http://127.0.0.1:9/mcp"},
    "port": {"command": "npx", "env": {"PORT": 8080}},
    "no-url": {"type": "http"},
    "no-command": {"args": ["x"]},
    "headers": {"type": "sse", "url": "http://127.0.0.1:9/sse", "headers": {"X-N": 1}},
    "args": {"command": "node", "args": "server.js"},
    "remote": {"type": "http", "url": "https://example.com/mcp"},
}


def test_mcp_skipped_servers_are_the_ones_claude_skips(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".claude").mkdir(parents=True)
    home.mkdir()
    _write(ws, {".mcp.json": json.dumps({"mcpServers": BAD_SERVERS}, indent=2) + "\n"})
    baton = {re.search(r"`([^`]+)`", f.message).group(1)  # type: ignore[union-attr]
             for f in _check(ws, ".mcp.json", "BTN821")}
    out = subprocess.run([CLAUDE, "mcp", "list"], cwd=ws, env=_env(home), capture_output=True,
                         text=True, timeout=300, check=False).stdout
    skipped = set(re.findall(r"\[Warning\] \[([^\]]+)\] mcpServers\.\S+: Skipped", out))
    assert skipped, out
    assert baton == skipped, out


def test_mcp_not_json_and_wrong_key(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    _write(tmp_path, {".mcp.json": '{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}\n'})
    got = _check(tmp_path, ".mcp.json", "BTN82")
    assert [(f.code, f.range.start_line) for f in got] == [("BTN820", 3)]
    _write(tmp_path, {".mcp.json": '{"servers": {"a": {"command": "x"}}}\n'})
    got = _check(tmp_path, ".mcp.json", "BTN82")
    assert [f.code for f in got] == ["BTN820"] and "`servers`" in got[0].message


def test_mcp_missing_script(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    _write(tmp_path, {"scripts/ok.sh": "#!/bin/sh\n", ".mcp.json": json.dumps({"mcpServers": {
        "a": {"command": "./scripts/mcp.sh"}, "b": {"command": "./scripts/ok.sh"},
        "c": {"command": "python3", "args": ["-u", "tools/server.py"]},
        "d": {"command": "uvx", "args": ["lean-lsp-mcp"]},
        "e": {"command": "node", "args": ["${HOME}/srv.js"]},
        "f": {"command": "python", "args": ["-m", "pkg.server"]},
        # Windows paths of public trees' files: the user's machine, not the project
        "g": {"command": "C:/Users/Guang/AppData/Roaming/npm/gitnexus.cmd", "args": ["mcp"]},
        "h": {"command": "python", "args": ["D:/AI/aegissec/scripts/mcp_demo_server.py"]}}},
        indent=2)})
    got = _check(tmp_path, ".mcp.json", "BTN822")
    assert sorted(re.search(r"`([^`]+)`", f.message).group(1)  # type: ignore[union-attr]
                  for f in got) == ["a", "c"]


# BimodalHarness/.claude/CLAUDE.md (public tree): imports written from the repository root
# in a file under .claude/.
CLAUDE_MD = ("# Agent System\n\nTask management and agent orchestration for project "
             "development. For comprehensive documentation, see @.claude/docs/README.md.\n"
             """
## Quick Reference

- **Task List**: @specs/TODO.md
- **Architecture**: @.claude/docs/README.md

## Rules References

- @.claude/rules/git-workflow.md - Commit conventions
- @rules/state-management.md - Task state patterns (specs/**)

Mentions are not imports: ask @claude, mail a@b.md, see `@rules/none.md`, install
@types/node, @tanstack/react-query and @solana/web3.js, and

```
@rules/fenced.md
```
""")


def _loaded(tmp_path: Path, ws: Path) -> set[str]:
    """The MARKER_* words of the files `claude -p` sent to the model from `ws`."""
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    api = FakeAnthropic(reply_text("ok"))
    with api:
        proc = subprocess.run([CLAUDE, "-p", "hi"], cwd=ws, capture_output=True, text=True,
                              timeout=300, check=False,
                              env=_env(home, ANTHROPIC_BASE_URL=api.url,
                                       ANTHROPIC_API_KEY="test-key"))
        assert proc.returncode == 0, proc.stderr
        body = json.dumps([r.body for r in api.messages])
    return set(re.findall(r"MARKER_[A-Z0-9_]+", body))


def test_imports_claude_skips_are_the_ones_reported(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _write(ws, {
        ".claude/CLAUDE.md": CLAUDE_MD,
        ".claude/docs/README.md": "MARKER_DOCS\n",
        "specs/TODO.md": "MARKER_TODO\n",
        ".claude/rules/git-workflow.md": "---\npaths: ['nothing/**']\n---\nMARKER_GIT\n",
        ".claude/rules/state-management.md": "---\npaths: ['nothing/**']\n---\nMARKER_STATE\n",
        ".claude/rules/fenced.md": "---\npaths: ['nothing/**']\n---\nMARKER_FENCED\n",
        ".claude/rules/none.md": "---\npaths: ['nothing/**']\n---\nMARKER_SPAN\n",
        "CLAUDE.md": "# Root\n@d1.md\n",
        **{f"d{i}.md": f"MARKER_DEPTH_{i}\n@d{i + 1}.md\n" for i in range(1, 7)},
    })
    loaded = _loaded(tmp_path, ws)
    # Claude Code: relative to the importing file; five hops; not in code
    assert {"MARKER_STATE", "MARKER_DEPTH_4"} <= loaded
    assert not loaded & {"MARKER_DOCS", "MARKER_TODO", "MARKER_GIT", "MARKER_FENCED",
                         "MARKER_SPAN", "MARKER_DEPTH_5"}
    missing = _check(ws, ".claude/CLAUDE.md", "BTN83")
    assert [(f.code, f.range.start_line + 1) for f in missing] == [
        ("BTN830", 3), ("BTN830", 7), ("BTN830", 8), ("BTN830", 12)]
    assert "trailing" not in missing[0].message  # `README.md.`: the period is read as a path
    assert "write `@docs/README.md`" in missing[2].message
    deep = _check(ws, "CLAUDE.md", "BTN83")
    assert [(f.code, f.range.start_line + 1) for f in deep] == [("BTN833", 2)]
    assert "d5.md" in deep[0].message


def test_duplicate_and_home_imports(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    # ProofChecker/.claude/rules/artifact-formats.md imports its templates twice
    _write(tmp_path, {
        ".claude/context/artifact-templates.md": "x\n",
        ".claude/rules/artifact-formats.md":
            "## Reports\n\n**Template**: See @../context/artifact-templates.md\n\n"
            "## Plans\n\nSee @../context/artifact-templates.md for the full template.\n",
        "CLAUDE.md": "# P\nStyle: @/home/benjamin/Projects/app/style.md, mine: "
                     "@~/.claude/mine.md, example: @/home/user/x.md\n",
    })
    got = _check(tmp_path, ".claude/rules/artifact-formats.md", "BTN83")
    assert [(f.code, f.range.start_line + 1) for f in got] == [("BTN831", 7)]
    got = _check(tmp_path, "CLAUDE.md", "BTN83")
    assert [(f.code, f.range.start_char) for f in got] == [("BTN832", 7)]


def test_mcp_home_paths_of_other_systems(tmp_path: Path) -> None:
    """Windows and WSL spellings of a user's home (from public trees); one finding per
    server; a placeholder user and a drive that is no home are left alone."""
    (tmp_path / ".claude").mkdir()
    _write(tmp_path, {".mcp.json": json.dumps({"mcpServers": {
        "codebase-memory-mcp": {"command": "C:/Users/Guang/AppData/Local/Programs/"
                                           "codebase-memory-mcp/codebase-memory-mcp.exe"},
        "ahk": {"command": "node",
                "args": ["/mnt/c/Users/uphol/Documents/Design/Coding/ahk-mcp/dist/index.js"],
                "env": {"AHK_MCP_SCRIPT_DIR": "/mnt/c/Users/uphol/Documents/AHK"}},
        "filesystem": {"command": "npx", "args": ["-y", "@anthropic-ai/mcp-server-filesystem",
                                                  "/home/user/0dai"]},
        "rider": {"type": "http", "url": "http://127.0.0.1:64482/stream",
                  "headers": {"IJ_MCP_SERVER_PROJECT_PATH": "F:/Repositories/helix/Source"}},
    }}, indent=2)})
    got = _check(tmp_path, ".mcp.json", "BTN823")
    assert [re.search(r"`([^`]+)`", f.message).group(1)  # type: ignore[union-attr]
            for f in got] == ["codebase-memory-mcp", "ahk"]
    assert "(and 1 more of its values)" in got[1].message


def test_mcp_file_inside_claude_dir_is_never_read(tmp_path: Path) -> None:
    """`.claude/.mcp.json` (a public plugin ships one beside its root `.mcp.json`): Claude
    Code lists none of its servers; Baton says so once and checks nothing inside it."""
    ws, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    _write(ws, {".claude/.mcp.json": json.dumps({"mcpServers": {
        "playwright": {"command": "cmd", "args": ["/c", "npx", "-y", "@playwright/mcp@latest"]},
        "broken": {"url": "http://127.0.0.1:9/mcp"}}}, indent=2)})
    assert classify(".claude/.mcp.json") is Kind.MCP_CONFIG
    got = _check(ws, ".claude/.mcp.json", "BTN82")
    assert [f.code for f in got] == ["BTN824"]
    assert "`playwright`, `broken`" in got[0].message
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    out = subprocess.run([CLAUDE, "mcp", "list"], cwd=ws, env=_env(home), capture_output=True,
                         text=True, timeout=300, check=False).stdout
    assert "No MCP servers configured" in out
    _write(ws, {".claude/.mcp.json": '{"_comment": "add servers here", "mcpServers": {}}\n'})
    assert _check(ws, ".claude/.mcp.json", "BTN82") == []


def test_rules_scoped_by_a_key_claude_ignores_load_everywhere(tmp_path: Path) -> None:
    """`globs:` (a public tree's `.claude/rules/` file, Cursor's key) and `applyTo:` do not
    scope a rule: Claude Code sends the file with the first request; `paths:` does."""
    ws = tmp_path / "ws"
    _write(ws, {
        ".claude/rules/database.md": '---\nglobs: "packages/db/**/*"\n---\n\n'
                                     "# Database Development\nMARKER_GLOBS\n",
        ".claude/rules/api.md": "---\napplyTo: 'src/app/api/**'\n---\nMARKER_APPLYTO\n",
        ".claude/rules/tests.md": "---\npaths:\n  - 'tests/**'\nglobs: 'tests/**'\n---\n"
                                  "MARKER_PATHS\n",
    })
    loaded = _loaded(tmp_path, ws)
    assert {"MARKER_GLOBS", "MARKER_APPLYTO"} <= loaded and "MARKER_PATHS" not in loaded
    got = {rel: [f.code for f in _check(ws, f".claude/rules/{rel}", "BTN834")]
           for rel in ("database.md", "api.md", "tests.md")}
    assert got == {"database.md": ["BTN834"], "api.md": ["BTN834"], "tests.md": []}


def test_imports_of_a_fifo_or_a_link_out_are_reported_unread(tmp_path: Path) -> None:
    # the author's `.claude/CLAUDE.md` import list; one rule file a FIFO, one a link out
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "git-workflow.md").write_text("OUTSIDE_SECRET\n@deeper.md\n", encoding="utf-8")
    ws = tmp_path / "ws"
    _write(ws, {".claude/CLAUDE.md":
                "# Project\n\n## Rules\n"
                "- @rules/state-management.md - Task state patterns (specs/**)\n"
                "- @rules/git-workflow.md - Commit conventions\n"
                "- @rules/error-handling.md - Error recovery (.claude/**)\n",
                ".claude/rules/error-handling.md": "Recover.\n"})
    os.mkfifo(ws / ".claude/rules/state-management.md")
    (ws / ".claude/rules/git-workflow.md").symlink_to(outside / "git-workflow.md")
    got: list = []
    worker = threading.Thread(target=lambda: got.extend(
        _check(ws, ".claude/CLAUDE.md", "BTN83")), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "an import that is a FIFO made the check wait for a writer"
    assert [(f.code, f.range.start_line + 1) for f in got] == [("BTN835", 4), ("BTN835", 5)]
    assert "a FIFO" in got[0].message
    assert str(outside / "git-workflow.md") in got[1].message
    assert not any("OUTSIDE_SECRET" in f.message or "deeper" in f.message for f in got)


ATHANOR_MCP = """{
  "mcpServers": {
    "athanor-agents": {
      "type": "stdio",
      "command": "python3",
      "args": [
        "scripts/mcp-athanor-agents.py"
      ],
      "env": {
        "ATHANOR_AGENT_URL": "http://192.168.1.244:9000",
        "ATHANOR_AGENT_API_TOKEN": "Zq3Vb8xNw1Kd0Lp-7RtYe5Gm2Hc9Fa4Ju6SiOoPlMnB"
      }
    },
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": [
        "@modelcontextprotocol/server-github"
      ],
      "env": {
        "GITHUB_TOKEN": "os.environ/GITHUB_TOKEN"
      }
    }
  }
}
"""
"""A public tree's `.mcp.json` (its committed token replaced by one of the same shape)."""


def test_mcp_committed_secret_and_litellm_syntax(tmp_path: Path) -> None:
    _write(tmp_path, {".claude/settings.json": "{}\n", "scripts/mcp-athanor-agents.py": "\n",
                      ".mcp.json": ATHANOR_MCP})
    got = _check(tmp_path, ".mcp.json", "BTN82")
    assert [(f.code, f.range.start_line + 1) for f in got] == [("BTN825", 11), ("BTN826", 21)]
    assert "Zq3Vb8" not in got[0].message and "ATHANOR_AGENT_API_TOKEN" in got[0].message
    fixed = ATHANOR_MCP.splitlines(keepends=True)
    edit = got[1].fix.edits[0]
    line = fixed[edit.range.start_line]
    fixed[edit.range.start_line] = (line[:edit.range.start_char] + edit.new_text
                                    + line[edit.range.end_char:])
    assert json.loads("".join(fixed))["mcpServers"]["github"]["env"] == {
        "GITHUB_TOKEN": "${GITHUB_TOKEN}"}


def test_mcp_values_that_are_no_committed_secret(tmp_path: Path) -> None:
    servers = {"a": {"command": "npx", "args": ["-y", "a-mcp"], "env": {
        "API_KEY": "${API_KEY}", "GITHUB_TOKEN": "your_github_token_here",
        "OPENAI_API_KEY": "sk-...", "KEY_FILE": "/etc/keys/service-account-2024.json",
        "SECRET_NAME": "prod-db-password", "PORT": "8080",
        "ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY:-sk-ant-placeholder}"}},
        "b": {"type": "http", "url": "https://example.com/mcp", "headers": {
            "Authorization": "Bearer ${API_TOKEN}", "X-Client": "claude-code-2024"}},
        "c": {"command": "npx", "args": ["-y", "c-mcp"], "env": {
            "SLACK_BOT": "xoxb-" + "1234567890-abcdefghijkl"}}}
    _write(tmp_path, {".claude/settings.json": "{}\n",
                      ".mcp.json": json.dumps({"mcpServers": servers}, indent=2)})
    got = _check(tmp_path, ".mcp.json", "BTN82")
    assert [f.code for f in got] == ["BTN825"]  # only the Slack token, by its format
    assert "`SLACK_BOT`" in got[0].message and "xoxb" not in got[0].message
