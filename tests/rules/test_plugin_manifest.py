"""BTN840/BTN841 against the pinned claude 2.1.331: the manifest keys Baton reports are the
keys `claude plugin validate` gives errors for, less the ones the plugin loads with all the
same (`claude --plugin-dir` lists the plugins it loaded). The manifests quote real ones (from
public trees: a plan's `.claude-plugin/plugin.json`, two plugins' manifests), with their
paths made to exist or not."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from baton_lsp.model.base import Kind
from baton_lsp.parse.jsonpos import Positions
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.discovery import find_workspaces
from baton_lsp.workspace.index import WorkspaceIndex
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import FakeAnthropic, reply_text

CLAUDE = cli_path("claude")

PLUGIN = {
    "name": "cc-observer",
    "version": "0.1.0",
    "description": "Real-time execution graph monitoring for Claude Code",
    "author": "Djalma Araujo",
    "commands": ["commands/*.md"],
    "hooks": "./hooks/hooks.json",
    "skills": ["./skills/semantic-search"],
    "agents": ["./agents/observer.md", "../shared/agents/x.md"],
    "outputStyles": "./styles",
    # npm's form, from another public plugin's manifest
    "repository": {"type": "git", "url": "https://github.com/10x-Anit/10x-development-team"},
    "keywords": ["development-team", "multi-agent"],
}
MARKETPLACE = {
    "name": "team tools",
    "owner": {"name": "Security Team"},
    "plugins": [{"name": "team-security", "source": "./plugins/team-security"},
                {"name": "code review", "source": "plugins/review"},
                {"name": "fmt", "source": {"source": "github", "repo": "a/b"}},
                # a public catalog writes all its 442 sources this way
                {"name": "image-optimization", "source": "github:Kermit457/gICM"}],
}


def _validate(root: Path, home: Path) -> set[str]:
    """Top-level keys of the errors (not warnings, not the directory's policy checks)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "HOME": str(home), "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    out = subprocess.run([CLAUDE, "plugin", "validate", str(root)], env=env, cwd=root,
                         capture_output=True, text=True, timeout=300, check=False).stdout
    errors = out.split("errors:", 1)[1] if "errors:" in out else ""
    errors = re.split(r"\n\s*\n", errors.strip(), maxsplit=1)[0]
    return {re.split(r"[.\[]", m)[0] for m in re.findall(r"❯ ([\w.\[\]]+):", errors)}


def _baton(root: Path, rel: str) -> set[str]:
    index = WorkspaceIndex(root, load_config(root))
    text = (root / rel).read_text(encoding="utf-8")
    pos = Positions(text)
    keys = set()
    for f in check_file(index, root / rel):
        if f.code not in ("BTN840", "BTN841"):
            continue
        offset = pos.starts[f.range.start_line] + f.range.start_char
        found = pos.path_at(offset)
        assert found is not None, f
        keys.add(str(found[0][0]))
    return keys


def test_plugin_errors_are_the_validators(tmp_path: Path) -> None:
    root, home = tmp_path / "cc-observer", tmp_path / "home"
    home.mkdir()
    (root / ".claude-plugin").mkdir(parents=True)
    (root / "skills" / "semantic-search").mkdir(parents=True)
    (root / "skills" / "semantic-search" / "SKILL.md").write_text(
        "---\nname: semantic-search\ndescription: Search\n---\n")
    (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(PLUGIN, indent=2))
    assert find_workspaces(root) == [root]
    baton = _baton(root, ".claude-plugin/plugin.json")
    assert baton == {"commands", "hooks", "agents", "outputStyles"}
    # the validator also refuses these two, but the plugin loads with them (next test)
    assert _validate(root, home) == baton | {"author", "repository"}


LOADING = {
    "okplug": {"name": "okplug"},
    "repoobj": {"name": "repoobj", "repository": {"type": "git", "url": "https://x.test"}},
    "authorstr": {"name": "authorstr", "author": "Djalma Araujo"},
    "cmdnodot": {"name": "cmdnodot", "commands": ["commands/extra.md"]},
    "spacey": {"name": "cc observer"},
}


def test_reported_plugins_are_the_ones_claude_does_not_load(tmp_path: Path) -> None:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    args: list[str] = []
    reported: set[str] = set()
    for name, manifest in LOADING.items():
        root = tmp_path / name
        (root / ".claude-plugin").mkdir(parents=True)
        (root / "commands").mkdir()
        (root / "commands" / "extra.md").write_text("---\ndescription: x\n---\nHi.\n")
        (root / ".claude-plugin" / "plugin.json").write_text(json.dumps(manifest))
        args += ["--plugin-dir", str(root)]
        if _baton(root, ".claude-plugin/plugin.json"):
            reported.add(name)
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    api = FakeAnthropic(reply_text("ok"))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "test-key",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    with api:
        proc = subprocess.run([CLAUDE, "-p", "hi", "--output-format", "stream-json",
                               "--verbose", *args], cwd=ws, capture_output=True, text=True,
                              timeout=300, check=False,
                              env={**env, "ANTHROPIC_BASE_URL": api.url})
    assert proc.returncode == 0, proc.stderr
    init = next(e for e in map(json.loads, proc.stdout.splitlines())
                if e.get("type") == "system" and e.get("subtype") == "init")
    loaded = {p["name"] for p in init["plugins"]} & set(LOADING)
    assert reported == {"cmdnodot", "spacey"}
    assert loaded == set(LOADING) - reported


def test_marketplace_errors_are_the_validators(tmp_path: Path) -> None:
    root, home = tmp_path / "market", tmp_path / "home"
    home.mkdir()
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps(MARKETPLACE, indent=2))
    assert root in find_workspaces(root)
    index = WorkspaceIndex(root, load_config(root))
    assert index.kind_of(root / ".claude-plugin" / "marketplace.json") is Kind.PLUGIN_MANIFEST
    validator = _validate(root, home)
    baton = _baton(root, ".claude-plugin/marketplace.json")
    # plus a local source that is not in the repository, which the validator does not look
    # for (installing it fails)
    assert validator == {"name", "plugins"}
    assert baton == validator
    found = check_file(index, root / ".claude-plugin" / "marketplace.json")
    sources = [f for f in found if f.code == "BTN840" and "source" in f.message]
    assert len(sources) == 1 and "(2 entries write their source this way)" in sources[0].message
    missing = [f for f in found if f.code == "BTN841"]
    assert len(missing) == 1 and "./plugins/team-security" in missing[0].message


SKILLS_MARKETPLACE = """{
\t"name": "anthropic-agent-skills",
\t"owner": {
\t\t"name": "Keith Lazuka",
\t\t"email": "klazuka@anthropic.com"
\t},
\t"plugins": [
\t\t{
\t\t\t"name": "document-skills",
\t\t\t"source": "./",
\t\t\t"strict": false,
\t\t\t"skills": [
\t\t\t\t"./skills/xlsx",
\t\t\t\t"./skills/docx"
\t\t\t]
\t\t},
\t\t{
\t\t\t"name": "outside",
\t\t\t"source": "./../elsewhere",
\t\t\t"strict": false,
\t\t\t"skills": ["./skills/x"]
\t\t}
\t]
}
"""
"""A public marketplace of manifest-less plugins (`strict: false`): each entry lists the
skill folders it ships (cut to two; the second entry added to leave the workspace)."""


def test_a_marketplaces_skills_are_discovered_and_their_links_checked(tmp_path: Path) -> None:
    root = tmp_path / "skills-repo"
    files = {
        ".claude-plugin/marketplace.json": SKILLS_MARKETPLACE,
        "skills/xlsx/SKILL.md": "---\nname: xlsx\ndescription: Spreadsheets\n---\n"
                                "For editing, read [the guide](edtiing.md).\n",
        "skills/xlsx/editing.md": "# Editing\n",
        "skills/docx/SKILL.md": "---\nname: docx\ndescription: Documents\n---\n"
                                "See [OOXML](ooxml.md).\n",
        "skills/docx/ooxml.md": "# OOXML\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (tmp_path / "elsewhere/skills/x").mkdir(parents=True)
    (tmp_path / "elsewhere/skills/x/SKILL.md").write_text("[a](gone.md)\n", encoding="utf-8")
    assert find_workspaces(root) == [root]
    index = WorkspaceIndex(root, load_config(root))
    kinds = {os.path.relpath(p, root): k for p, k in index.files().items()}
    assert kinds["skills/xlsx/SKILL.md"] is Kind.SKILL
    assert kinds["skills/docx/SKILL.md"] is Kind.SKILL
    assert not any("elsewhere" in p for p in kinds)  # `./../elsewhere` is never walked
    got = [f for f in check_file(index, root / "skills/xlsx/SKILL.md") if f.code == "BTN133"]
    assert [(f.range.start_line + 1, "edtiing.md" in f.message) for f in got] == [(5, True)]
    assert check_file(index, root / "skills/docx/SKILL.md") == []


def test_a_plugin_skills_path_naming_one_skill_folder(tmp_path: Path) -> None:
    # Claude Code reads `<path>/SKILL.md` when the path holds one, else `<path>/*/SKILL.md`
    manifest = {"name": "cc-observer", "skills": ["./extra/semantic-search"]}
    files = {".claude-plugin/plugin.json": json.dumps(manifest),
             "extra/semantic-search/SKILL.md": "---\nname: semantic-search\ndescription: "
                                               "Search\n---\nRead [the index](idx.md).\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    index = WorkspaceIndex(tmp_path, load_config(tmp_path))
    assert index.kind_of(tmp_path / "extra/semantic-search/SKILL.md") is Kind.SKILL
    got = [f.code for f in check_file(index, tmp_path / "extra/semantic-search/SKILL.md")]
    assert got == ["BTN133"]
