"""Workspace discovery and file kinds from paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton_lsp.model.base import Kind
from baton_lsp.workspace.discovery import (
    classify,
    find_root,
    find_workspaces,
    plugin_layout,
    walk,
)


@pytest.mark.parametrize(("rel", "kind"), [
    (".claude/specs/001_x/plans/001-x-plan.md", Kind.PLAN),
    (".claude/specs/plans/007_dark.md", Kind.PLAN),
    (".claude/specs/plans/045_x/phase_7_y/stage_1_z.md", Kind.PLAN),
    (".claude/specs/955_x/debug/002-fix-implementation-plan.md", Kind.PLAN),
    ("specs/081_x/plans/17_implementation-plan.md", Kind.PLAN),
    (".claude/specs/001_x/reports/001-r.md", Kind.REPORT),
    (".claude/specs/001_x/summaries/s.md", Kind.SUMMARY),
    (".claude/agents/research-specialist.md", Kind.AGENT),
    # templates to copy from are not agents (their placeholders are meant)
    (".claude/agents/templates/coordinator-template.md", None),
    (".claude/agents/templates/test-phases/coverage-analysis.md", None),
    (".claude/agents/_agent-file-structure.template.md", None),
    (".claude/agents/agent-template.md", None),
    (".claude/agents/agent_template.md", None),
    (".claude/agents/TEMPLATE.md", None),
    # near misses: names that only contain the word are agents
    (".claude/agents/template-builder.md", Kind.AGENT),
    (".claude/agents/templates.md", Kind.AGENT),
    (".claude/agents/_Agent.metadata.reference.md", Kind.AGENT),
    (".claude/commands/errors.md", Kind.COMMAND),
    (".claude/commands/errors.md.backup-20251101", None),
    (".claude/commands/plan.bak", None),
    (".claude/commands/backups/errors.md", None),
    (".claude/commands/shared/part.md", None),
    (".claude/commands/git/commit.md", Kind.COMMAND),
    (".claude/commands/team/review/deep.md", Kind.COMMAND),
    (".claude/commands/git/README.md", None),
    (".claude/commands/templates/command.md", None),
    (".claude/skills/lean-research/SKILL.md", Kind.SKILL),
    (".claude/skills/stack/backend-patterns/SKILL.md", Kind.SKILL),
    (".claude/agents/_archive/cco.md", None),                   # disabled on purpose
    ("specs/archive/032_x/plans/implementation-001.md", None),  # done plans filed away
    (".claude/skills/lean-research/reference.md", None),
    (".claude/skills/SKILL.md", None),
    ("specs/state.json", Kind.REGISTRY),
    (".claude/specs/state.json", Kind.REGISTRY),
    ("specs/081_x/state.json", None),
    ("specs/plans/TEMPLATE.md", None),
    ("specs/plans/11-issue-11-stage-6.md", Kind.PLAN),
    # found by the wider patterns: need the file's text, so not ours from the path alone
    ("docs/plans/refactor.md", None),
    ("PLAN.md", None),
    (".claude/TODO.md", None),
    (".claude/specs/001_x/plans/backups/001-x_20251201_101010.md", None),
    (".claude/tmp/workflow_coordinate_1762902471.sh", Kind.STATE),
    (".claude/data/logs/errors.jsonl", Kind.ERRORS_LOG),
    (".claude/tests/logs/test-errors.jsonl", Kind.ERRORS_LOG),
    (".claude/logs/events.jsonl", None),  # a hook's own log, not the errors log
    (".claude/data/checkpoints/implement_x_20251101_101010.json", Kind.CHECKPOINT),
    (".claude/tests/.claude/data/logs/errors.jsonl", None),
    (".claude/agents/README.md", None),
    (".claude/docs/guide.md", None),
])
def test_classify(rel: str, kind: Kind | None) -> None:
    assert classify(rel) is kind


def test_find_root_from_inside_and_below(make_workspace) -> None:
    root: Path = make_workspace({".claude/specs/001_x/plans/p.md": "# P\n"})
    assert find_root(root / ".claude/specs/001_x/plans/p.md") == root
    assert find_root(root) == root
    assert find_root(root / ".claude") == root


def test_find_workspaces_finds_nested_roots(make_workspace) -> None:
    root: Path = make_workspace({"other/a/.claude/agents/x.md": "---\n---\n",
                                 ".claude/agents/y.md": "x"})
    assert find_workspaces(root) == [root, root / "other/a"]


def test_walk_respects_exclude(make_workspace) -> None:
    root: Path = make_workspace({".claude/lib/fixtures/a.md": "# A\n",
                                 ".claude/agents/b.md": "x"})
    assert {p.name for p, _ in walk(root)} == {"a.md", "b.md"}
    assert {p.name for p, _ in walk(root, [".claude/lib/*"])} == {"b.md"}


def test_walk_skips_the_engines_history_but_it_is_still_classified(make_workspace) -> None:
    """Up to 500 checksummed files per workflow are engine output: checked when opened or
    named, not on every walk. A hand-placed checkpoint beside them is still walked."""
    root = make_workspace({".claude/data/checkpoints/wf_1/000001.json": "{}",
                           ".claude/data/checkpoints/legacy.json": "{}"})
    walked = {p.relative_to(root).as_posix() for p, _ in walk(root)}
    assert ".claude/data/checkpoints/legacy.json" in walked
    assert ".claude/data/checkpoints/wf_1/000001.json" not in walked
    assert classify(".claude/data/checkpoints/wf_1/000001.json") is Kind.CHECKPOINT


PLAN = "# Refactor\n\n## Phase 1: Rename\n\n- [ ] rename the config\n"
CHECKLIST = "# Release\n\n- [x] tag\n- [ ] publish\n"
NOTE = "# Notes on plans\n\nWe plan to rewrite the renderer next year.\n"


@pytest.mark.parametrize(("rel", "text", "kind"), [
    ("docs/plans/refactor.md", PLAN, Kind.PLAN),
    ("docs/plans/2026/refactor.md", PLAN, Kind.PLAN),
    ("docs/superpowers/plans/2026-01-05-refactor.md", PLAN, Kind.PLAN),
    ("docs/plans/angular.progress.md", "## Phase 1: Renames\n- Status: completed\n",
     Kind.PLAN),
    ("docs/plans/ideas.md", NOTE, None),
    ("docs/plans/README.md", PLAN, None),
    ("docs/plans/plan-template.md", PLAN, None),
    ("docs/guide.md", PLAN, None),
    ("docs/plans.md", PLAN, None),
    ("PLAN.md", PLAN, Kind.PLAN),
    ("plan.md", CHECKLIST, Kind.PLAN),
    ("PLAN.md", NOTE, None),
    ("NOTES.md", PLAN, None),
    (".claude/TODO.md", CHECKLIST, Kind.PLAN),
    (".claude/TODO.md", "TODO:\nKROK 1\n- shorten the names\n", None),
    (".claude/plans/dark-mode.md", PLAN, Kind.PLAN),
    ("docs/plans/old.md.bak", PLAN, None),
    ("docs/plans/backups/refactor.md", PLAN, None),
])
def test_plans_outside_specs_need_the_shape_of_a_plan(make_workspace, rel: str, text: str,
                                                      kind: Kind | None) -> None:
    """`docs/`, a root `PLAN.md` and `.claude/TODO.md` also hold notes and templates: a file
    there is checked as a plan only when it has phase headings or task checkboxes."""
    root: Path = make_workspace({rel: text})
    assert classify(rel, root) is kind
    walked = {p.relative_to(root).as_posix(): k for p, k in walk(root)}
    assert walked.get(rel) is kind


def test_walk_finds_every_place(make_workspace) -> None:
    root: Path = make_workspace({
        ".claude/commands/plain.md": "x",
        ".claude/commands/git/commit.md": "x",
        ".claude/commands/shared/fragment.md": "x",
        ".claude/skills/lean/SKILL.md": "---\nname: lean\n---\n",
        ".claude/skills/lean/notes.md": "x",
        ".claude/TODO.md": CHECKLIST,
        "specs/state.json": "{}",
        "specs/081_x/plans/17_plan.md": PLAN,
        "specs/081_x/.return-meta.json": "{}",
        "docs/plans/refactor.md": PLAN,
        "docs/plans/README.md": PLAN,
        "docs/architecture.md": PLAN,
        "PLAN.md": PLAN,
        "node_modules/pkg/docs/plans/x.md": PLAN,
        "src/plans/x.md": PLAN,
    })
    walked = {p.relative_to(root).as_posix(): k for p, k in walk(root)}
    assert walked == {
        ".claude/commands/plain.md": Kind.COMMAND,
        ".claude/commands/git/commit.md": Kind.COMMAND,
        ".claude/skills/lean/SKILL.md": Kind.SKILL,
        ".claude/TODO.md": Kind.PLAN,
        "specs/state.json": Kind.REGISTRY,
        "specs/081_x/plans/17_plan.md": Kind.PLAN,
        "docs/plans/refactor.md": Kind.PLAN,
        "PLAN.md": Kind.PLAN,
    }


def _tree(base: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return base


def test_a_specs_tree_without_claude_is_a_workspace(tmp_path: Path) -> None:
    """Trees such as codegenie keep plans in `specs/plans/` and Claude Code's setup in the
    user's home: `baton check tree` must still find them."""
    codegenie = _tree(tmp_path / "codegenie", {"specs/plans/11-issue.md": PLAN,
                                               "specs/plans/phase-plans/102/phase_1.md": PLAN})
    proof = _tree(tmp_path / "proof", {"specs/state.json": "{}"})
    topics = _tree(tmp_path / "topics", {"specs/081_x/plans/17_plan.md": PLAN})
    _tree(tmp_path / "openapi", {"specs/api.yaml": "openapi: 3.1.0\n"})
    assert find_workspaces(tmp_path) == [codegenie, proof, topics]
    assert find_root(codegenie / "specs/plans/phase-plans/102/phase_1.md") == codegenie
    assert find_root(proof / "specs") == proof
    assert find_root(tmp_path / "openapi/specs/api.yaml") is None
    assert {p.relative_to(codegenie).as_posix() for p, _ in walk(codegenie)} == {
        "specs/plans/11-issue.md", "specs/plans/phase-plans/102/phase_1.md"}


def test_the_nearest_root_wins(tmp_path: Path) -> None:
    """A package with its own `specs/` inside a repository with `.claude/`: its plans are
    classified relative to the package, where `specs/` is."""
    outer = _tree(tmp_path, {".claude/agents/a.md": "x", "pkg/specs/plans/p.md": PLAN})
    assert find_root(outer / "pkg/specs/plans/p.md") == outer / "pkg"
    assert find_workspaces(outer) == [outer, outer / "pkg"]


def test_check_a_specs_only_tree(tmp_path: Path) -> None:
    """`baton check` on a tree with `specs/` but no `.claude/` checks its files."""
    from baton_lsp.rules.checker import check_paths

    tree = _tree(tmp_path / "t", {"specs/plans/1-x.md": PLAN, "specs/state.json": "{"})
    result = check_paths([tree])
    assert result.files == 2
    assert any(f.code == "BTN600" for f in result.findings)


# Claude Code plugin layout (plugins reference): the manifest in `.claude-plugin/`, the
# components at the plugin's root, extra paths from the manifest supplementing them.
PLUGIN_JSON = '{"name": "review-kit", "agents": ["./extra/agents/"], "commands": "./cmds/ship.md"}'


def _plugin(root: Path, files: dict[str, str]) -> Path:
    for rel, text in {".claude-plugin/plugin.json": PLUGIN_JSON, **files}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def test_a_plugin_is_a_workspace_and_its_components_are_found(tmp_path: Path) -> None:
    root = _plugin(tmp_path / "review-kit", {
        "agents/reviewer.md": "x", "agents/README.md": "x",
        "extra/agents/auditor.md": "x",
        "commands/review.md": "x", "commands/git/commit.md": "x",
        "commands/templates/t.md": "x",
        "cmds/ship.md": "x", "cmds/other.md": "x",
        "skills/tdd/SKILL.md": "x", "skills/tdd/notes.md": "x",
        "docs/plans/refactor.md": PLAN,
        "hooks/hooks.json": "{}", "README.md": "x",
    })
    assert find_root(root / "agents" / "reviewer.md") == root
    assert find_workspaces(root) == [root]
    walked = {p.relative_to(root).as_posix(): k for p, k in walk(root)}
    assert walked == {
        "agents/reviewer.md": Kind.AGENT, "extra/agents/auditor.md": Kind.AGENT,
        "commands/review.md": Kind.COMMAND, "commands/git/commit.md": Kind.COMMAND,
        "cmds/ship.md": Kind.COMMAND, "skills/tdd/SKILL.md": Kind.SKILL,
        "docs/plans/refactor.md": Kind.PLAN,
        ".claude-plugin/plugin.json": Kind.PLUGIN_MANIFEST,  # checked by BTN840/BTN841
        "hooks/hooks.json": Kind.SETTINGS,  # its hooks are checked as a settings file's
    }
    assert classify("agents/reviewer.md", root) is None  # without its layout: not a plugin's
    assert classify("agents/reviewer.md", root, plugin_layout(root)) is Kind.AGENT


def test_a_marketplace_holds_one_workspace_per_plugin(tmp_path: Path) -> None:
    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / ".claude-plugin" / "marketplace.json").write_text('{"plugins": []}')
    a = _plugin(tmp_path / "plugins" / "a", {"agents/x.md": "x"})
    b = _plugin(tmp_path / "plugins" / "b", {"commands/y.md": "x"})
    # the marketplace's own root is one too (its manifest is checked), each plugin its own
    assert sorted(find_workspaces(tmp_path)) == [tmp_path, a, b]
    assert find_root(tmp_path / "plugins" / "b" / "commands" / "y.md") == b
    assert {p.relative_to(tmp_path).as_posix() for p, _ in walk(tmp_path)} == {
        ".claude-plugin/marketplace.json"}


@pytest.mark.parametrize("manifest", ["{not json", "[]", '{"agents": ["../outside/"]}',
                                      '{"agents": 7, "commands": [null, "/etc"]}'])
def test_a_broken_or_hostile_manifest_keeps_the_defaults_and_stays_inside(
        tmp_path: Path, manifest: str) -> None:
    root = tmp_path / "p"
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "evil.md").write_text("x")
    _plugin(root, {"agents/ok.md": "x"})
    (root / ".claude-plugin" / "plugin.json").write_text(manifest)
    walked = {p.relative_to(root).as_posix(): k for p, k in walk(root)}
    assert walked == {"agents/ok.md": Kind.AGENT,  # and the manifest, which BTN840 reports
                      ".claude-plugin/plugin.json": Kind.PLUGIN_MANIFEST}


def test_an_edited_manifest_is_read_again(tmp_path: Path) -> None:
    import os

    root = _plugin(tmp_path / "p", {"more/a.md": "x"})
    (root / ".claude-plugin" / "plugin.json").write_text('{"name": "p"}')
    assert classify("more/a.md", root, plugin_layout(root)) is None
    manifest = root / ".claude-plugin" / "plugin.json"
    manifest.write_text('{"name": "p", "agents": "./more"}')
    st = manifest.stat()
    os.utime(manifest, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert classify("more/a.md", root, plugin_layout(root)) is Kind.AGENT


def test_git_worktrees_under_dot_claude_are_not_part_of_the_workspace(tmp_path: Path) -> None:
    """`.claude/worktrees/<name>` (Claude Code's and Baton's isolated phases) holds full
    checkouts of the repository: checked where they came from, never twice."""
    root = tmp_path / "ws"
    tree = root / ".claude" / "worktrees" / "baton-w-phase-2"
    for base in (root, tree):
        (base / ".claude" / "agents").mkdir(parents=True)
        (base / ".claude" / "agents" / "a.md").write_text("---\nname: a\n---\nbody\n")
        (base / "specs" / "001_x" / "plans").mkdir(parents=True)
        (base / "specs" / "001_x" / "plans" / "p.md").write_text("### Phase 1: A\n")
    found = sorted(str(p.relative_to(root)) for p, _ in walk(root))
    assert found == [".claude/agents/a.md", "specs/001_x/plans/p.md"]
    assert find_root(tree / "specs" / "001_x" / "plans" / "p.md") is None
    assert find_root(tree / ".claude" / "agents" / "a.md") is None
    assert classify(".claude/worktrees/baton-w-phase-2/specs/001_x/plans/p.md", root) is None
    assert find_workspaces(root) == [root]


def test_an_error_named_jsonl_of_test_cases_is_no_errors_log(make_workspace) -> None:
    """issue 34: a file of test cases named for the errors it exercises was checked as the
    errors log (BTN402 on every case); outside `logs/` the records decide."""
    from baton_lsp.rules.checker import check_paths

    cases = "".join(
        json.dumps({"id": f"err-{n:03d}", "input": text, "expected_behavior": want}) + "\n"
        for n, (text, want) in enumerate([
            ("/implement with a missing plan path", "asks for the plan path, does not guess"),
            ("/research ''", "reports that a topic is required")], start=1))
    record = json.dumps({"timestamp": "2025-11-12T09:14:00Z", "error_type": "state_error",
                         "error_message": "no state file"}) + "\n"
    root: Path = make_workspace({".claude/tests/fixtures/error-handling-cases.jsonl": cases,
                                 ".claude/data/errors.jsonl": record,
                                 ".claude/data/logs/errors.jsonl": ""})
    assert classify(".claude/tests/fixtures/error-handling-cases.jsonl", root) is None
    assert classify(".claude/data/errors.jsonl", root) is Kind.ERRORS_LOG
    assert classify(".claude/data/logs/errors.jsonl", root) is Kind.ERRORS_LOG
    result = check_paths([root])
    assert not [f for f in result.findings if f.code.startswith("BTN40")]
