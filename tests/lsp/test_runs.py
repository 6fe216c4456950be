"""Run state in the editor over a real LSP connection: hard-barrier diagnostics, live code
lenses, the resume / retry / open actions, checkpoint files (schema diagnostics, hover,
migration) and a server restarted mid-run re-attaching to the workflow."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

from tests.conftest import CORPUS
from tests.lsp.conftest import CLIENTS, TIMEOUT, make_config, open_doc, setup
from tests.lsp.test_workflows import (
    BEHAVIOUR,
    _workspace,
    command,
    finished,
    has_progress,
    wait_changed,
)


def is_pull(client: LanguageClient) -> bool:
    td = client.capabilities.text_document
    return bool(td and td.diagnostic)


async def diagnostics(client: LanguageClient, uri: str, predicate: Any) -> list[Any]:
    """The document's diagnostics as the client sees them (pull or push), once `predicate`
    holds."""
    async def loop() -> list[Any]:
        while True:
            if is_pull(client):
                report = await client.text_document_diagnostic_async(
                    types.DocumentDiagnosticParams(
                        text_document=types.TextDocumentIdentifier(uri=uri)))
                items = report.items
            else:
                items = client.diagnostics.get(uri, [])
            if predicate(items):
                return items
            if is_pull(client):
                await asyncio.sleep(0.05)
            else:
                await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    return await asyncio.wait_for(loop(), TIMEOUT)


def lens_refresh(client: LanguageClient) -> bool:
    ws = client.capabilities.workspace
    return bool(ws and ws.code_lens and ws.code_lens.refresh_support)


def code(items: list[Any], c: str) -> list[Any]:
    return [d for d in items if d.code == c]


@pytest_lsp.fixture(config=make_config(), params=CLIENTS)
async def editor(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path: Path) -> AsyncIterator[LanguageClient]:
    marker = request.node.get_closest_marker("workspace_files")
    root = _workspace(tmp_path, json.loads(marker.args[0][BEHAVIOUR]) if marker else None)
    yield await setup(lsp_client, request, root)
    await lsp_client.shutdown_session()


async def run_action(client: LanguageClient, action: Any) -> Any:
    """Execute a code action's command. pygls' client structures a CodeAction that has only
    a command as a `Command` whose `command` is the nested object's repr: undo that."""
    import ast

    cmd = action.command
    if isinstance(cmd, str) and cmd.startswith("{"):
        cmd = types.Command(**ast.literal_eval(cmd))
    assert isinstance(cmd, types.Command), action
    return await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=cmd.command, arguments=cmd.arguments)), TIMEOUT)


async def lenses(client: LanguageClient, uri: str) -> list[tuple[int, str, str]]:
    got = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return [(lens.range.start.line, lens.command.title if lens.command else "",
             lens.command.command if lens.command else "") for lens in got or []]


@pytest.mark.workspace_files({BEHAVIOUR: json.dumps(
    {"implement.phase-2": {"write": "nothing"}})})
async def test_hard_barrier_diagnostic_lenses_and_resume_action(editor: LanguageClient) -> None:
    root = editor.workspace_root
    wid = (await command(editor, "workflow.start", {"description": "Add a farewell"}))[
        "workflow_id"]
    done = await wait_changed(editor, finished(wid))
    assert done["event"]["status"] == "failed"
    plan = Path((await command(editor, "workflow.status", {"id": wid}))["plan"])
    uri = await open_doc(editor, plan)
    lines = plan.read_text().splitlines()
    items = await diagnostics(editor, uri, lambda ds: code(ds, "BTN501"))
    (barrier,) = code(items, "BTN501")
    assert lines[barrier.range.start.line].startswith("### Phase 2")
    assert barrier.severity == types.DiagnosticSeverity.Error
    assert "phase_2_summary.md" in barrier.message and "Agent reported" in barrier.message

    found = await lenses(editor, uri)
    titles = [t for _, t, _ in found]
    assert "✗ failed in implement" in titles and "Resume" in titles
    assert "Show checkpoint" in titles
    phase2 = [t for line, t, _ in found if line == barrier.range.start.line]
    assert "✗ hard barrier: summary missing" in phase2
    assert any(t.startswith("✓ done in") for t in titles)  # phase 1

    actions = await editor.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=barrier.range,
        context=types.CodeActionContext(diagnostics=[barrier])))
    by_title = {a.title: a for a in actions or []}
    resume = next(a for t, a in by_title.items() if t.startswith("Resume workflow") and
                  "earlier" not in t)
    assert any(t.startswith("Retry failed Phase 2") for t in by_title)
    assert any("earlier checkpoint" in t for t in by_title)
    assert any(t.startswith("Open checkpoint") for t in by_title)
    # A run's failure is not a finding in the plan's text: a suppression comment would only
    # hide the failure until the next run, so none is offered for it.
    assert not [t for t in by_title if t.startswith("Suppress")], sorted(by_title)
    # Named as the editor's messages name the workflow: by its description, not its id.
    assert 'Retry failed Phase 2 and continue "Add a farewell"' in by_title, sorted(by_title)
    assert not [t for t in by_title if wid in t], sorted(by_title)
    log_entry = next(a for t, a in by_title.items() if t.startswith("Open error log entry"))
    await run_action(editor, log_entry)
    assert editor.shown_documents[-1].uri.endswith("errors.jsonl")  # type: ignore[attr-defined]
    assert editor.shown_documents[-1].selection is not None  # type: ignore[attr-defined]

    (root / BEHAVIOUR).write_text("{}")  # the agent is fixed
    result = await run_action(editor, resume)
    assert result["resumed"] is True
    asked = editor.asked[-1].message  # type: ignore[attr-defined]
    assert "Will run again: implement.phase-2" in asked and "Will skip" in asked
    await wait_changed(editor, lambda p: finished(wid)(p) and
                       p["event"]["status"] == "complete")
    await diagnostics(editor, uri, lambda ds: not [d for d in ds if
                                                   str(d.code).startswith("BTN50")])

    async def complete() -> list[str]:
        # The lens follows the checkpoint directory, which settles when the engine has
        # exited and let go of its lock: shortly after its `finished` event.
        while True:
            titles = [t for _, t, _ in await lenses(editor, uri)]
            if any(t.startswith("✓ complete") for t in titles):
                return titles
            await asyncio.sleep(0.05)
    titles = await asyncio.wait_for(complete(), TIMEOUT)
    assert any(t.startswith("✓ complete") for t in titles), titles
    if lens_refresh(editor):  # sent right after the notification (coalesced): wait for it
        await asyncio.wait_for(editor.lens_refreshed.wait(), TIMEOUT)  # type: ignore[attr-defined]


async def test_declined_resume_changes_nothing(editor: LanguageClient) -> None:
    root = editor.workspace_root
    (root / BEHAVIOUR).write_text(json.dumps({"plan": {"write": "empty"}}))
    wid = (await command(editor, "workflow.start", {"description": "Plan it",
                                                    "scope": "research-and-plan",
                                                    "complexity": 1}))["workflow_id"]
    await wait_changed(editor, finished(wid))

    editor.answer = "Cancel"  # type: ignore[attr-defined]
    result = await command(editor, "workflow.resumeWithPreview", {"id": wid})
    assert result["resumed"] is False and result["preview"]["failed_state"] == "plan"
    assert (await command(editor, "workflow.status", {"id": wid}))["status"] == "failed"


async def test_run_started_outside_the_editor_is_followed(editor: LanguageClient) -> None:
    """`baton run` from a terminal: the server sees its checkpoints (no event stream) and
    refreshes lenses and notifies the client."""
    root = editor.workspace_root
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton_lsp", "run", "From a terminal", "--scope",
        "research-only", "--complexity", "1", "--workspace", str(root),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
    done = await wait_changed(editor, lambda p: p["event"]["event"] == "checkpoint" and
                              p["event"]["status"] == "complete")
    assert done["event"]["running"] is False
    if lens_refresh(editor):  # sent right after the notification (coalesced): wait for it
        await asyncio.wait_for(editor.lens_refreshed.wait(), TIMEOUT)  # type: ignore[attr-defined]


async def test_checkpoint_file_schema_hover_and_migration(editor: LanguageClient) -> None:
    root = editor.workspace_root
    if not (CORPUS / ".claude").is_dir():
        pytest.skip("shared corpus not present")
    old = root / ".claude/data/checkpoints/legacy.json"
    old.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(CORPUS / ".claude/checkpoints/test_524747/test_checkpoint.json", old)
    uri = await open_doc(editor, old, "json")
    items = await diagnostics(editor, uri, lambda ds: code(ds, "BTN412"))
    (outdated,) = code(items, "BTN412")
    actions = await editor.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=outdated.range,
        context=types.CodeActionContext(diagnostics=[outdated])))
    migrate = next(a for a in actions or [] if a.title == "Migrate checkpoint to 2.1")
    assert migrate.edit is not None
    (edit,) = migrate.edit.changes[uri] if migrate.edit.changes else \
        migrate.edit.document_changes[0].edits  # type: ignore[union-attr]
    assert json.loads(edit.new_text)["schema_version"] == "2.1"

    bad = root / ".claude/data/checkpoints/bad.json"
    data = json.loads(old.read_text())
    data["status"] = 7
    bad.write_text(json.dumps(data, indent=2))
    uri = await open_doc(editor, bad, "json")
    items = await diagnostics(editor, uri, lambda ds: code(ds, "BTN411"))
    status_line = next(i for i, ln in enumerate(bad.read_text().splitlines())
                       if '"status"' in ln)
    assert any(d.range.start.line == status_line for d in code(items, "BTN411"))

    wid = (await command(editor, "workflow.start", {"description": "Research",
                                                    "scope": "research-only",
                                                    "complexity": 1}))["workflow_id"]
    await wait_changed(editor, finished(wid))
    path = Path((await command(editor, "workflow.status", {"id": wid}))["checkpoint_path"])
    text = path.read_text()
    at = text.index('"current_state":"') + len('"current_state":"') + 1
    line = text.count("\n", 0, at)
    col = at - (text.rfind("\n", 0, at) + 1)
    uri = await open_doc(editor, path, "json")
    hover = await editor.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=col)))
    assert hover is not None
    value = hover.contents.value  # type: ignore[union-attr]
    assert "**complete**" in value and "terminal" in value and wid in value


@pytest.mark.parametrize("kind", CLIENTS[:1])
async def test_restarted_server_reattaches_and_reports_the_end(tmp_path: Path,
                                                               kind: str) -> None:
    root = _workspace(tmp_path, {"research.1": {"until": ".claude/release"}})

    class Req:
        param = kind

    first = make_test_lsp_client()
    await first.start_io(sys.executable, "-m", "baton_lsp", "lsp")
    await setup(first, Req, root)  # type: ignore[arg-type]
    wid = (await command(first, "workflow.start", {"description": "Long research",
                                                   "scope": "research-only",
                                                   "complexity": 1}))["workflow_id"]
    await wait_changed(first, lambda p: p["workflow_id"] == wid and
                       p["event"]["event"] == "step")
    await first.shutdown_session()  # the server exits; the workflow must not

    second = make_test_lsp_client()
    await second.start_io(sys.executable, "-m", "baton_lsp", "lsp")
    try:
        await setup(second, Req, root)  # type: ignore[arg-type]
        running = await wait_changed(second, lambda p: p["workflow_id"] == wid and
                                     p["event"]["running"] is True)
        assert running["event"]["status"] == "in_progress"
        if has_progress(second):  # the re-attached run's progress begins while it runs
            async def begun() -> None:
                while not any(r and getattr(r[0], "title", None) == "Baton: Long research"
                              for r in second.progress_reports.values()):
                    await second.wait_for_notification(types.PROGRESS)

            await asyncio.wait_for(begun(), TIMEOUT)
        (root / ".claude/release").write_text("")  # the agent may finish now
        end = await wait_changed(second, lambda p: p["workflow_id"] == wid and
                                 p["event"]["status"] == "complete")
        assert end["event"]["running"] is False
        if has_progress(second):
            reports = next(r for r in second.progress_reports.values()
                           if r and getattr(r[0], "title", None) == "Baton: Long research")
            assert reports[0].kind == "begin" and reports[-1].kind == "end"
            assert "complete" in (reports[-1].message or "")
        status = await command(second, "workflow.status", {"id": wid})
        assert status["status"] == "complete" and not status["running"]
    finally:
        await second.shutdown_session()


async def test_folder_added_later_is_indexed_and_followed(editor: LanguageClient,
                                                          tmp_path: Path) -> None:
    other = _workspace(tmp_path / "b", {"implement.phase-2": {"write": "nothing"}})
    failed = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton_lsp", "run", "Before the folder was opened",
        "--workspace", str(other), stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(failed.wait(), TIMEOUT) == 1
    folder = types.WorkspaceFolder(uri=other.as_uri(), name="b")
    editor.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[folder], removed=[])))
    (row,) = [r for r in await command(editor, "workflow.list")
              if r["workspace"] == str(other)]
    assert row["status"] == "failed"
    uri = await open_doc(editor, Path(row["plan"]))
    await diagnostics(editor, uri, lambda ds: code(ds, "BTN501"))

    (other / BEHAVIOUR).write_text("{}")  # a terminal run in the new folder is followed
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton_lsp", "resume", row["workflow_id"], "--workspace",
        str(other), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(proc.wait(), TIMEOUT) == 0
    await wait_changed(editor, lambda p: p["workflow_id"] == row["workflow_id"] and
                       p["event"].get("status") == "complete")

    editor.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[], removed=[folder])))
    rows = await command(editor, "workflow.list")
    assert not [r for r in rows if r["workspace"] == str(other)]
