"""Open documents whose findings come from workflow runs are re-published when a run
changes, without being edited: an agent file gets BTN505 when a workflow started from a
terminal fails its research barrier and loses it when the run is resumed to the end; a
failed run failing elsewhere moves BTN505 between agent files; a history entry loses its
BTN416 once a newer entry supersedes it."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from baton_lsp.runs.store import CheckpointStore
from tests.lsp.conftest import CLIENTS, TIMEOUT, make_config, open_doc, setup
from tests.lsp.test_runs import code, diagnostics
from tests.lsp.test_workflows import BEHAVIOUR, _workspace, wait_changed


@pytest_lsp.fixture(config=make_config(), params=CLIENTS)
async def editor(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path: Path) -> AsyncIterator[LanguageClient]:
    root = _workspace(tmp_path, {"research.*": {"write": "empty"}})
    yield await setup(lsp_client, request, root)
    await lsp_client.shutdown_session()


async def baton(root: Path, *args: str) -> int:
    """`baton ARGS --workspace ROOT` from a terminal: no event stream reaches the server."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton_lsp", *args, "--workspace", str(root),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    return await asyncio.wait_for(proc.wait(), TIMEOUT)


async def test_open_agent_file_gets_btn505_when_a_run_fails_and_loses_it_on_resume(
        editor: LanguageClient) -> None:
    root: Path = editor.workspace_root  # type: ignore[attr-defined]
    agent = root / ".claude" / "agents" / "research-specialist.md"
    uri = await open_doc(editor, agent)
    await diagnostics(editor, uri, lambda ds: True)
    assert not code(await diagnostics(editor, uri, lambda ds: True), "BTN505")

    assert await baton(root, "run", "add a farewell", "--scope", "research-only",
                       "--complexity", "1") == 1
    failed = await wait_changed(editor, lambda p: p["event"].get("status") == "failed")
    wid = failed["workflow_id"]
    items = await diagnostics(editor, uri, lambda ds: code(ds, "BTN505"))
    (finding,) = code(items, "BTN505")
    assert wid in finding.message and "empty file" in finding.message
    assert agent.read_text().splitlines()[finding.range.start.line] == \
        "# Research Specialist Agent"  # no `name:` key: the title

    (root / BEHAVIOUR).write_text(json.dumps({}))  # the agent is fixed
    assert await baton(root, "resume", wid) == 0
    await wait_changed(editor, lambda p: p["workflow_id"] == wid and
                       p["event"].get("status") == "complete")
    await diagnostics(editor, uri, lambda ds: not code(ds, "BTN505"))


async def test_a_failed_run_failing_elsewhere_moves_btn505_between_open_agents(
        editor: LanguageClient) -> None:
    """failed → failed with no running state in between (a resume too quick to be seen, or
    a checkpoint written by other tooling): the run's status never changes, yet the failed
    barrier moves from the research agent to the planner, and both open files follow."""
    root: Path = editor.workspace_root  # type: ignore[attr-defined]
    agents = root / ".claude" / "agents"
    research = await open_doc(editor, agents / "research-specialist.md")
    planner = await open_doc(editor, agents / "plan-architect.md")
    assert await baton(root, "run", "add a farewell", "--scope", "research-and-plan",
                       "--complexity", "1") == 1
    failed = await wait_changed(editor, lambda p: p["event"].get("status") == "failed")
    wid = failed["workflow_id"]
    await diagnostics(editor, research, lambda ds: code(ds, "BTN505"))
    assert not code(await diagnostics(editor, planner, lambda ds: True), "BTN505")

    store = CheckpointStore(root, wid)
    entry = store.latest().path
    checkpoint = await open_doc(editor, entry, "json")
    resume = await diagnostics(editor, checkpoint, lambda ds: code(ds, "BTN416"))
    assert {d.message.split(": ")[1] for d in code(resume, "BTN416")} == {
        "Checkpoint status", "Last run had errors"}
    data = json.loads(entry.read_text())
    steps = data["baton"]["steps"]
    for sid, step in steps.items():
        if sid.startswith("research."):
            step.update(status="done", message=None, failure=None)
    plan_path = data["baton"]["paths"]["plan"]
    steps["plan"] = {"state": "plan", "role": "plan", "status": "failed", "attempts": 1,
                     "artifact": plan_path,
                     "message": f"HARD BARRIER FAILED: artifact not found at {plan_path}"}
    store.save(data, "failed: plan")
    await wait_changed(editor, lambda p: p["workflow_id"] == wid and
                       (p["event"].get("checkpoint") or "").endswith(store.latest().path.name))
    items = await diagnostics(editor, planner, lambda ds: code(ds, "BTN505"))
    (moved,) = code(items, "BTN505")
    assert "nothing at that path" in moved.message and "step plan" in moved.message
    await diagnostics(editor, research, lambda ds: not code(ds, "BTN505"))
    # the entry that was the newest is superseded: a resume reads the new one
    await diagnostics(editor, checkpoint, lambda ds: not code(ds, "BTN416"))
