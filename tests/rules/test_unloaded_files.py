"""BTN241 (files Claude Code never loads) and BTN400 on links under `.claude/` that dangle or
leave the workspace, on real trees written to disk (links are real symbolic links)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton_lsp.model.base import Finding, Kind
from baton_lsp.rules.checker import check_paths
from baton_lsp.workspace.discovery import classify, walk_files

LOOSE_SKILL = """---
name: Deploy Agent Server
description: Complete procedure for deploying the agent server to Node 1. Rsync, build, \
restart, verify.
disable-model-invocation: true
---

# Deploy Agent Server
"""
"""From a public tree: one of twelve skills written as loose files in `.claude/skills/`."""

LOOSE_NO_FRONT_MATTER = """# Node SSH

SSH into infrastructure nodes and run commands.
"""
"""From the same tree: a skill with no front matter, also loose."""

NESTED_CONTEXT = """# Configuration Context

> **TL;DR**: Pydantic settings with env var binding. Validate early, fail fast.

**Inherits**: Root context (MCP tools, Do/Don't rules)
"""
"""From a public tree: a per-folder memory file spelt `.claude/claude.md`."""


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def found(root: Path, *codes: str) -> list[tuple[str, str, int]]:
    result = check_paths([root], jobs=1)
    return sorted((f.code, os.path.relpath(f.path, root), f.range.start_line)
                  for f in result.findings if f.code in codes)


def findings(root: Path, code: str) -> list[Finding]:
    return [f for f in check_paths([root], jobs=1).findings if f.code == code]


# -- BTN241: loose skill files ----------------------------------------------------------


def test_loose_skill_files_are_reported_once_on_line_1(tmp_path: Path) -> None:
    write(tmp_path, {
        ".claude/skills/deploy-agent.md": LOOSE_SKILL,
        ".claude/skills/node-ssh.md": LOOSE_NO_FRONT_MATTER,
        ".claude/skills/verify/SKILL.md": "---\nname: verify\ndescription: Verifies\n---\n",
    })
    assert found(tmp_path, "BTN241") == [
        ("BTN241", ".claude/skills/deploy-agent.md", 0),
        ("BTN241", ".claude/skills/node-ssh.md", 0),
    ]
    msg = next(f.message for f in findings(tmp_path, "BTN241") if "deploy-agent" in f.path)
    assert "has skill front matter" in msg
    assert "expected `.claude/skills/deploy-agent/SKILL.md`" in msg


@pytest.mark.parametrize("files", [
    {".claude/skills/00-index.md": "# Skills index\n\n- deploy: deploys\n"},
    {".claude/skills/README.md": "# Skills\n"},
    {".claude/skills/deploy.md": "# Notes on deploy\n",
     ".claude/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploys\n---\n"},
    {".claude/skills/deploy/reference.md": "# Reference of the deploy skill\n",
     ".claude/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploys\n---\n"},
])
def test_documents_kept_beside_skills_are_not_reported(tmp_path: Path,
                                                       files: dict[str, str]) -> None:
    write(tmp_path, files)
    assert found(tmp_path, "BTN241") == []


# -- BTN241: case of SKILL.md / CLAUDE.md -------------------------------------------------


def test_lower_case_skill_and_memory_files_are_reported(tmp_path: Path) -> None:
    write(tmp_path, {
        ".claude/skills/athena-engage/skill.md": "---\nname: athena-engage\n"
                                                 "description: Runs an engagement\n---\n",
        ".claude/claude.md": NESTED_CONTEXT,
        "config/.claude/claude.md": NESTED_CONTEXT,
    })
    got = findings(tmp_path, "BTN241")
    assert sorted((os.path.relpath(f.path, tmp_path), f.range.start_line) for f in got) == [
        (".claude/claude.md", 0), (".claude/skills/athena-engage/skill.md", 0),
        ("config/.claude/claude.md", 0)]
    by_path = {os.path.relpath(f.path, tmp_path): f.message for f in got}
    assert "case-sensitive" in by_path[".claude/skills/athena-engage/skill.md"]
    assert "expected `SKILL.md`" in by_path[".claude/skills/athena-engage/skill.md"]
    assert "expected `.claude/CLAUDE.md`" in by_path[".claude/claude.md"]


def test_lower_case_claude_md_at_the_root_is_reported(tmp_path: Path) -> None:
    write(tmp_path, {"claude.md": NESTED_CONTEXT, ".claude/agents/a.md": "# notes\n"})
    assert found(tmp_path, "BTN241") == [("BTN241", "claude.md", 0)]


@pytest.mark.parametrize("files", [
    {"CLAUDE.md": "# Project\n", ".claude/CLAUDE.md": "# More\n",
     ".claude/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploys\n---\n"},
    # imported by the memory file Claude Code does load: it is read after all
    {"CLAUDE.md": "# Project\n\n@.claude/claude.md\n", ".claude/claude.md": NESTED_CONTEXT},
    # the capitalised file is there too: the skill and the memory load from it
    {".claude/skills/x/SKILL.md": "---\nname: x\ndescription: d\n---\n",
     ".claude/skills/x/skill.md": "# notes\n"},
])
def test_correctly_spelt_or_imported_files_are_not_reported(tmp_path: Path,
                                                            files: dict[str, str]) -> None:
    write(tmp_path, files)
    assert found(tmp_path, "BTN241") == []


def test_classify_is_decided_from_the_path() -> None:
    assert classify(".claude/skills/x.md") is Kind.UNLOADED
    assert classify(".claude/skills/x/skill.md") is Kind.UNLOADED
    assert classify(".claude/skills/x/SKILL.md") is Kind.SKILL
    assert classify(".claude/claude.md") is Kind.UNLOADED
    assert classify("claude.md") is Kind.UNLOADED
    assert classify(".claude/skills/x/notes.md") is None
    assert classify(".claude/rules/x.md") is Kind.MEMORY  # a plain rule file: a memory file


# -- BTN400: links under .claude/ that dangle or leave the workspace ------------------------


def test_dangling_absolute_rule_links_are_reported(tmp_path: Path) -> None:
    # From a public tree: every file of .claude/rules/ is an absolute link into the author's
    # home (`00-index.md -> /home/<user>/<repo>/.agent/rules/00-index.md`).
    write(tmp_path, {".agent/rules/00-index.md": "# Rules index\n",
                     ".claude/agents/a.md": "# notes\n"})
    rules = tmp_path / ".claude/rules"
    rules.mkdir(parents=True)
    gone = tmp_path / "elsewhere/home/hft_platform/.agent/rules/00-index.md"
    (rules / "00-index.md").symlink_to(gone)
    (rules / "01-core-laws.md").symlink_to("../../.agent/rules/01-core-laws.md")
    (rules / "02-ok.md").symlink_to("../../.agent/rules/00-index.md")  # resolves: fine
    (rules / "03-plain.md").write_text("# A plain rule\n", encoding="utf-8")
    got = findings(tmp_path, "BTN400")
    assert sorted(os.path.relpath(f.path, tmp_path) for f in got) == [
        ".claude/rules/00-index.md", ".claude/rules/01-core-laws.md"]
    by_path = {os.path.relpath(f.path, tmp_path): f.message for f in got}
    assert f"broken symbolic link to {gone}" in by_path[".claude/rules/00-index.md"]
    assert "absolute link works only on the machine" in by_path[".claude/rules/00-index.md"]
    assert "absolute" not in by_path[".claude/rules/01-core-laws.md"]


def test_linked_skill_folders_that_dangle_or_leave_are_reported(tmp_path: Path) -> None:
    # From a public tree: 3 of 5 skills are absolute links to /Users/<user>/.../skills/<name>.
    ws = tmp_path / "ws"
    write(ws, {".claude/skills/knowledge-add/SKILL.md":
               "---\nname: knowledge-add\ndescription: Adds knowledge\n---\n"})
    outside = tmp_path / "Pentest/skills/kali-tool-parser"
    write(outside, {"SKILL.md": "---\nname: kali-tool-parser\ndescription: Parses\n---\n"})
    skills = ws / ".claude/skills"
    (skills / "evidence-collection").symlink_to(tmp_path / "Pentest/skills/evidence-collection")
    (skills / "kali-tool-parser").symlink_to(outside)
    (skills / "local").symlink_to("knowledge-add")  # a link inside the workspace: fine
    kinds = {os.path.relpath(p, ws): k for p, k in walk_files(ws)}
    assert kinds[".claude/skills/evidence-collection"] is Kind.UNLOADED
    assert kinds[".claude/skills/kali-tool-parser"] is Kind.UNLOADED
    assert ".claude/skills/local" not in kinds
    got = {os.path.relpath(f.path, ws): f.message for f in findings(ws, "BTN400")}
    assert sorted(got) == [".claude/skills/evidence-collection",
                           ".claude/skills/kali-tool-parser"]
    assert "broken symbolic link to" in got[".claude/skills/evidence-collection"]
    assert "a symbolic link to a directory outside the workspace" in \
        got[".claude/skills/kali-tool-parser"]
    assert "Parses" not in got[".claude/skills/kali-tool-parser"]  # nothing read beyond it


def test_dangling_agent_link_names_its_target(tmp_path: Path) -> None:
    agents = tmp_path / ".claude/agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").symlink_to("/nonexistent/vault/agents/reviewer.md")
    got = findings(tmp_path, "BTN400")
    assert len(got) == 1
    assert "broken symbolic link to /nonexistent/vault/agents/reviewer.md" in got[0].message
