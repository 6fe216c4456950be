"""Every surface of a run names the same state: the `baton/workflowChanged` notification,
the Workflows view's rows (`workflow.list`, which the status bar also reads), the plan's code
lenses, `$/progress` and the plan graph (`baton.showGraph`), at three moments of a real
scripted run held by its agents (`until`: a file the test writes) — researching, implementing
wave 2 of 3, complete. In a real VS Code they disagreed: the progress said a phase was
running while the tree said `research running`, the graph said no workflow had run the plan."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import CLIENTS, TIMEOUT, make_config, open_doc, setup
from tests.lsp.test_workflows import _workspace, command, finished, wait_changed

HOLDS = {"research.1": {"until": ".claude/go-research"},
         "implement.phase-2": {"until": ".claude/go-implement"}}
TITLE = "Baton: Hold it"
MARKS = {"✓": "done", "⟳": "running", "○": "pending", "✗": "failed", "⏸": "failed"}
AGE = re.compile(r" · (updated )?[\d hmins]+ ago$")


@pytest_lsp.fixture(config=make_config(), params=CLIENTS[:1])
async def editor(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path: Path) -> AsyncIterator[LanguageClient]:
    yield await setup(lsp_client, request, _workspace(tmp_path, HOLDS))
    await lsp_client.shutdown_session()


def step(wid: str, sid: str, status: str) -> Any:
    return lambda p: p["workflow_id"] == wid and p["event"].get("event") == "step" and \
        p["event"].get("step") == sid and p["event"].get("status") == status


def progress(client: LanguageClient) -> list[Any]:
    return next(r for r in client.progress_reports.values()
                if r and getattr(r[0], "title", None) == TITLE)


async def progress_ended(client: LanguageClient) -> None:
    async def loop() -> None:
        while not any(r and getattr(r[0], "title", None) == TITLE and r[-1].kind == "end"
                      for r in client.progress_reports.values()):
            await client.wait_for_notification(types.PROGRESS)

    await asyncio.wait_for(loop(), TIMEOUT)


async def show_graph(client: LanguageClient, uri: str) -> dict[str, Any]:
    return await asyncio.wait_for(client.workspace_execute_command_async(  # type: ignore[no-any-return]
        types.ExecuteCommandParams(command="baton.showGraph", arguments=[uri])), TIMEOUT)


async def surfaces(client: LanguageClient, wid: str,
                   plan: Path | None) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """What each surface says of the run now (its text), and the phase statuses of those
    that show phases."""
    said: dict[str, Any] = {}
    last = [p for p in client.changed if p["workflow_id"] == wid][-1]  # type: ignore[attr-defined]
    said["notification"] = (last.get("run") or {}).get("text")
    (row,) = [r for r in await command(client, "workflow.list") if r["workflow_id"] == wid]
    said["tree row"] = row.get("text")
    said["status"] = (await command(client, "workflow.status", {"id": wid})).get("text")
    said["progress"] = progress(client)[-1].message
    phases: dict[str, dict[str, str]] = {}
    if plan is not None:
        uri = plan.as_uri()
        got = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        titles = [(lens.range.start.line, lens.command.title) for lens in got or []
                  if lens.command]
        run = [t for _, t in titles if t[:1] in "●✓"]
        said["lens"] = AGE.sub("", run[0][2:]) if run else None
        lines = plan.read_text().splitlines()
        phases["lens"] = {re.match(r"### Phase (\d+)", lines[line]).group(1):  # type: ignore[union-attr]
                          MARKS.get(t[:1], t) for line, t in titles
                          if lines[line].startswith("### Phase") and t[:1] in MARKS}
        graph = await show_graph(client, uri)
        said["graph"] = (graph.get("run") or {}).get("text")
        phases["graph"] = graph.get("phases")
        phases["tree"] = {str(n): (row["steps"].get(f"implement.phase-{n}") or {}).get(
            "status", "pending") for n in range(1, 5)}
    return said, phases


async def test_every_surface_names_the_same_state(editor: LanguageClient) -> None:
    root = editor.workspace_root  # type: ignore[attr-defined]
    wid = (await command(editor, "workflow.start", {"description": "Hold it",
                                                    "complexity": 1}))["workflow_id"]

    # 1. researching: no plan yet, so no lens and no graph
    await wait_changed(editor, step(wid, "research.1", "running"))
    said, _ = await surfaces(editor, wid, None)
    assert said == dict.fromkeys(said, "researching"), said

    # 2. implementing wave 2 of 3: phase 3 done beside phase 2, which is held
    (root / ".claude/go-research").write_text("")
    await wait_changed(editor, step(wid, "implement.phase-2", "running"))
    await wait_changed(editor, step(wid, "implement.phase-3", "done"))
    plan = Path((await command(editor, "workflow.status", {"id": wid}))["plan"])
    await open_doc(editor, plan)
    said, phases = await surfaces(editor, wid, plan)
    assert said == dict.fromkeys(said, "implementing · wave 2/3 · 2/4 phases"), said
    live = {"1": "done", "2": "running", "3": "done", "4": "pending"}
    assert phases == dict.fromkeys(phases, live), phases

    # 3. complete, once the progress ended
    (root / ".claude/go-implement").write_text("")
    assert (await wait_changed(editor, finished(wid)))["event"]["status"] == "complete"
    await progress_ended(editor)
    said, phases = await surfaces(editor, wid, plan)
    assert said == dict.fromkeys(said, "complete · 4/4 phases"), said
    assert phases == dict.fromkeys(phases, dict.fromkeys("1234", "done")), phases


async def test_the_graph_shows_the_plans_own_markers(editor: LanguageClient) -> None:
    """The example plan marks phases 1 and 2 `[COMPLETE]` and phase 3 `[IN PROGRESS]`: no
    workflow ever ran it, so 1 and 2 are drawn done and nothing is drawn running."""
    root = editor.workspace_root  # type: ignore[attr-defined]
    plan = root / ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"
    uri = await open_doc(editor, plan)
    graph = await show_graph(editor, uri)
    assert graph.get("run") is None
    assert graph.get("phases") == {"1": "done", "2": "done", "3": "pending", "4": "pending",
                                   "5": "pending"}, graph
