"""Quick fixes that create a missing agent or linked file (issue 38: "several findings only
offer 'Suppress' where a fix exists").

The test applies each action's `WorkspaceEdit` itself, as a client would: the `CreateFile`
operation creates the file (exclusively: it must not exist), the `TextDocumentEdit` fills
it; then the real `baton check` reads the tree again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from baton_lsp.runs.confine import IGNORE_ALL
from tests.lsp.conftest import (
    TIMEOUT,
    make_config,
    open_doc,
    wait_for_diagnostics,
    wait_indexed,
)

COMMAND = ".claude/commands/probe.md"
PLAN = ".claude/specs/003_probe/plans/001-probe-plan.md"
OC_PLAN = ".opencode/commands/plan.md"
OC_REVISE = ".opencode/commands/revise.md"
MEMORY = "CLAUDE.md"

COMMAND_TEXT = """---
description: Probe the missing agent
---
Task {
  subagent_type: "probe-writer"
  description: "Write the probe"
  prompt: "Write it"
}

Read [the guide](../docs/probe-guide.md) first.
"""

PLAN_TEXT = """# Probe Plan

## Metadata
- **Research Reports**:
  - [Analysis](../reports/001-analysis.md)

### Phase 1: Probe [NOT STARTED]
- [ ] Probe it
"""


@pytest_lsp.fixture(config=make_config(), params=["visual-studio-code"])
async def creator(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                  workspace: Path) -> AsyncIterator[LanguageClient]:
    """A client with VS Code's capabilities; `no-create` drops the `create` resource
    operation, `no-document-changes` the `documentChanges` a `CreateFile` travels in."""
    caps = client_capabilities("visual-studio-code")
    assert caps.workspace is not None and caps.workspace.workspace_edit is not None
    if request.param == "no-create":
        caps.workspace.workspace_edit.resource_operations = [
            types.ResourceOperationKind.Rename, types.ResourceOperationKind.Delete]
    elif request.param == "no-document-changes":
        caps.workspace.workspace_edit.document_changes = None
    marker = request.node.get_closest_marker("workspace_files")
    for rel, text in (marker.args[0] if marker else {}).items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text, encoding="utf-8")

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        return None

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        initialization_options={"trusted": False}))
    lsp_client.workspace_root = workspace  # type: ignore[attr-defined]
    yield lsp_client
    await lsp_client.shutdown_session()


def _path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path))


async def _actions(client: LanguageClient, rel: str, code: str) -> list[types.CodeAction]:
    """The quick fixes offered on `code`'s diagnostic in `rel`, once it is published."""
    uri = await open_doc(client, client.workspace_root / rel)  # type: ignore[attr-defined]
    diags = await wait_for_diagnostics(client, uri, lambda ds: any(d.code == code for d in ds),
                                       timeout=TIMEOUT)
    diag = next(d for d in diags if d.code == code)
    found = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag], only=["quickfix"])))
    return [a for a in found or [] if isinstance(a, types.CodeAction)]


def _apply(action: types.CodeAction) -> Path:
    """Apply a create-then-fill edit as a client does; the created file's path."""
    assert action.edit is not None and action.edit.changes is None
    create, fill = action.edit.document_changes or []
    assert isinstance(create, types.CreateFile) and isinstance(fill, types.TextDocumentEdit)
    assert create.options is not None and create.options.ignore_if_exists is False
    assert not create.options.overwrite and fill.text_document.uri == create.uri
    path = _path(create.uri)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("x", encoding="utf-8") as out:  # CreateFile: fails if it exists
        (edit,) = fill.edits
        assert isinstance(edit, types.TextEdit)
        assert (edit.range.start.line, edit.range.start.character) == (0, 0)
        out.write(edit.new_text)
    return path


def _check(root: Path, *rels: str) -> list[dict[str, object]]:
    """`baton check --format json` on `rels`, from the real CLI, no cache."""
    done = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--no-cache",
                           "--exit-zero", "--format", "json", *rels],
                          cwd=root, capture_output=True, text=True, timeout=TIMEOUT,
                          check=True)
    found: list[dict[str, object]] = json.loads(done.stdout)
    return found


def _codes(found: list[dict[str, object]], rel: str) -> set[object]:
    return {f["code"] for f in found if f["filename"] == rel}


@pytest.mark.parametrize("creator", ["visual-studio-code", "no-create", "no-document-changes"],
                         indirect=True)
@pytest.mark.workspace_files({COMMAND: COMMAND_TEXT})
async def test_create_claude_agent(creator: LanguageClient,
                                   request: pytest.FixtureRequest) -> None:
    """BTN319 offers "Create agent `probe-writer`" to a client that applies `CreateFile`;
    the agent it creates is clean and clears the finding. A client without the `create`
    resource operation (or without `documentChanges`) gets no such action."""
    root: Path = creator.workspace_root  # type: ignore[attr-defined]
    actions = await _actions(creator, COMMAND, "BTN319")
    titles = [a.title for a in actions]
    assert "Suppress BTN319 here" in titles
    if request.node.callspec.params["creator"] != "visual-studio-code":
        assert not [t for t in titles if t.startswith("Create")], titles
        return
    create = next(a for a in actions if a.title == "Create agent `probe-writer`")
    assert create.kind == types.CodeActionKind.QuickFix and create.diagnostics
    # an editor-only offer: fix-all and `baton check --fix --unsafe-fixes` create nothing
    subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--no-cache", "--exit-zero",
                    "--fix", "--unsafe-fixes", COMMAND], cwd=root, capture_output=True,
                   timeout=TIMEOUT, check=True)
    assert not (root / ".claude" / "agents" / "probe-writer.md").exists()
    await wait_indexed(creator)  # no re-check of the whole tree under way to hide a missed one
    made = _apply(create)
    assert made == root / ".claude" / "agents" / "probe-writer.md"
    creator.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=made.as_uri(), type=types.FileChangeType.Created)]))
    uri = (root / COMMAND).as_uri()
    await wait_for_diagnostics(creator, uri, lambda ds: not any(d.code == "BTN319" for d in ds))
    assert made.read_text(encoding="utf-8").startswith("---\nname: probe-writer\ndescription: ")
    found = _check(root, COMMAND, ".claude/agents/probe-writer.md")
    assert _codes(found, ".claude/agents/probe-writer.md") == set(), found
    assert "BTN319" not in _codes(found, COMMAND), found


@pytest.mark.workspace_files({
    ".opencode/agent/planner.md": "---\ndescription: Creates plans\nmode: subagent\n---\nPlan.\n",
    OC_PLAN: "---\ndescription: Create a plan\nagent: planer\n---\nPlan $ARGUMENTS\n",
    OC_REVISE: "---\ndescription: Revise a plan\n---\ntask(\n  subagent_type=\"task-expander\","
               "\n  prompt=\"Update task ${task_number}\"\n)\n"})
async def test_create_opencode_agents(creator: LanguageClient) -> None:
    """BTN711 (a command's `agent`) and BTN713 (a task call's `subagent_type`) create
    OpenCode subagents under `.opencode/agent/`."""
    root: Path = creator.workspace_root  # type: ignore[attr-defined]
    for rel, code, name in ((OC_PLAN, "BTN711", "planer"),
                            (OC_REVISE, "BTN713", "task-expander")):
        actions = await _actions(creator, rel, code)
        create = next(a for a in actions if a.title == f"Create agent `{name}`")
        made = _apply(create)
        assert made == root / ".opencode" / "agent" / f"{name}.md"
        assert "\nmode: subagent\n" in made.read_text(encoding="utf-8")
    agents = [".opencode/agent/planer.md", ".opencode/agent/task-expander.md"]
    found = _check(root, OC_PLAN, OC_REVISE, *agents)
    assert not [f for f in found if f["filename"] in agents], found
    assert not _codes(found, OC_PLAN) & {"BTN711"} and not _codes(found, OC_REVISE) & {"BTN713"}


@pytest.mark.workspace_files({
    COMMAND: COMMAND_TEXT, PLAN: PLAN_TEXT,
    ".claude/rules/other.md": "Other rules.\n",
    MEMORY: "# Project\n- @.claude/rules/git-workflow.md - Commit conventions\n"})
async def test_create_linked_files(creator: LanguageClient) -> None:
    """A broken link in a plan (BTN130), in a command (BTN133) and a missing `@` import
    (BTN830) each offer to create the target with a heading; each finding then clears."""
    root: Path = creator.workspace_root  # type: ignore[attr-defined]
    cases = ((PLAN, "BTN130", ".claude/specs/003_probe/reports/001-analysis.md"),
             (COMMAND, "BTN133", ".claude/docs/probe-guide.md"),
             (MEMORY, "BTN830", ".claude/rules/git-workflow.md"))
    for rel, code, target in cases:
        actions = await _actions(creator, rel, code)
        create = next(a for a in actions if a.title == f"Create `{target}`")
        assert _apply(create) == root / target
        assert (root / target).read_text(encoding="utf-8").startswith("# ")
    found = _check(root, *(rel for rel, _, _ in cases), *(t for _, _, t in cases))
    for rel, code, target in cases:
        assert code not in _codes(found, rel), found
        assert _codes(found, target) == set(), found


@pytest.mark.workspace_files({
    COMMAND: COMMAND_TEXT.replace(
        "Read [the guide](../docs/probe-guide.md) first.",
        "Read [the guide](../docs/probe-guide.md), [outside](../../../outside.md), "
        "[linked](../elsewhere/x.md), [run log](../data/logs/x.md), "
        "[owned](../scratch/x.md), [under a file](../plain/x.md) and "
        "[a section](../docs/other.md#setup).")})
async def test_no_creation_outside_the_workspace(creator: LanguageClient,
                                                 tmp_path: Path) -> None:
    """No "Create" for a target outside the workspace, through a symlink leaving it, in
    Baton's run history or a directory Baton made for itself (its `.gitignore`), below a
    file, or with an anchor; the plain link in the same file still gets one."""
    root: Path = creator.workspace_root  # type: ignore[attr-defined]
    away = tmp_path / "away"
    away.mkdir()
    os.symlink(away, root / ".claude" / "elsewhere")
    (root / ".claude" / "scratch").mkdir()
    (root / ".claude" / "scratch" / ".gitignore").write_bytes(IGNORE_ALL)
    (root / ".claude" / "plain").write_text("a file, not a directory\n", encoding="utf-8")
    uri = await open_doc(creator, root / COMMAND)
    diags = await wait_for_diagnostics(
        creator, uri, lambda ds: sum(d.code == "BTN133" for d in ds) >= 7, timeout=TIMEOUT)
    links = [d for d in diags if d.code == "BTN133"]
    assert len(links) == 7, links
    titles: list[str] = []
    for diag in links:
        found = await creator.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag], only=["quickfix"])))
        titles += [a.title for a in found or [] if a.title.startswith("Create")]
    assert titles == ["Create `.claude/docs/probe-guide.md`"], (titles, links)
    assert list(away.iterdir()) == []
