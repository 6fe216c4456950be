"""`baton.server.workflow.*` over a real LSP connection: real `baton run` subprocesses with
the deterministic script runner."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.conftest import EXAMPLE
from tests.conftest import SCRIPTED_WORKFLOW_CONFIG as CONFIG
from tests.lsp.conftest import CHANGED, CLIENTS, TIMEOUT, make_config, setup

BEHAVIOUR = ".claude/baton-script.json"


def _workspace(tmp_path: Path, behaviour: dict[str, Any] | None) -> Path:
    dest = tmp_path / "ws"
    shutil.copytree(EXAMPLE, dest)
    (dest / ".claude" / "baton.toml").write_text(CONFIG, encoding="utf-8")
    if behaviour is not None:
        (dest / ".claude" / "baton-script.json").write_text(json.dumps(behaviour))
    return dest


@pytest_lsp.fixture(config=make_config(), params=CLIENTS)
async def trusted(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                  tmp_path: Path) -> AsyncIterator[LanguageClient]:
    marker = request.node.get_closest_marker("workspace_files")
    root = _workspace(tmp_path, json.loads(marker.args[0][BEHAVIOUR]) if marker else None)
    yield await setup(lsp_client, request, root, True)
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=make_config(), params=CLIENTS[:1])
async def untrusted(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                    tmp_path: Path) -> AsyncIterator[LanguageClient]:
    yield await setup(lsp_client, request, _workspace(tmp_path, None), False)
    await lsp_client.shutdown_session()


async def command(client: LanguageClient, name: str, *args: Any) -> Any:
    return await asyncio.wait_for(client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=f"baton.server.{name}", arguments=list(args))),
        TIMEOUT)


async def wait_changed(client: LanguageClient, predicate: Any) -> dict[str, Any]:
    async def loop() -> dict[str, Any]:
        while True:
            for params in client.changed:  # type: ignore[attr-defined]
                if predicate(params):
                    return params
            await client.wait_for_notification(CHANGED)

    return await asyncio.wait_for(loop(), TIMEOUT)


def finished(wid: str) -> Any:
    return lambda p: p["workflow_id"] == wid and p["event"]["event"] == "finished"


def has_progress(client: LanguageClient) -> bool:
    window = client.capabilities.window
    return bool(window and window.work_done_progress)


async def test_start_follows_the_run_to_completion(trusted: LanguageClient) -> None:
    started = await command(trusted, "workflow.start",
                            {"description": "Add a thing", "scope": "research-only",
                             "complexity": 1})
    wid = started["workflow_id"]
    assert wid and started["pid"] > 0
    done = await wait_changed(trusted, finished(wid))
    assert done["event"]["status"] == "complete"
    kinds = [p["event"]["event"] for p in trusted.changed if p["workflow_id"] == wid]
    assert "transition" in kinds and "step" in kinds
    if has_progress(trusted):
        async def ended() -> list[Any]:
            while True:
                for reports in trusted.progress_reports.values():
                    if reports and reports[0].title == "Baton: Add a thing" and \
                            reports[-1].kind == "end":
                        return reports
                await trusted.wait_for_notification(types.PROGRESS)

        reports = await asyncio.wait_for(ended(), TIMEOUT)
        assert reports[0].kind == "begin" and reports[0].cancellable
        assert any(r.kind == "report" and r.message for r in reports)
        assert "complete" in reports[-1].message
    status = await command(trusted, "workflow.status", {"id": wid})
    assert status["status"] == "complete" and status["description"] == "Add a thing"
    rows = await command(trusted, "workflow.list")
    assert [r["workflow_id"] for r in rows] == [wid]
    checkpoint = await command(trusted, "checkpoint.show", {"id": wid})
    assert checkpoint["status"] == "complete"
    # Both rows are `baton status --json`'s, with the follower's state laid over them.
    cli = json.loads(subprocess.run(
        [sys.executable, "-m", "baton_lsp", "status", "--json",
         f"--workspace={trusted.workspace_root}"], capture_output=True, text=True,
        timeout=120, check=True).stdout)
    assert [r["workflow_id"] for r in cli] == [wid]
    cli[0].pop("worktrees")  # the CLI's own addition (`baton status` lists them)
    overlaid = {"running", "state", "status", "steps", "text", "current_wave"}
    for row in (status, rows[0]):
        assert set(row) == set(cli[0]) | overlaid | {"workspace", "followed"}
        assert {k: v for k, v in row.items() if k in set(cli[0]) - overlaid} == \
            {k: v for k, v in cli[0].items() if k not in overlaid}
        assert row["workspace"] == str(trusted.workspace_root) and row["followed"] is False
        assert row["status"] == cli[0]["status"] and row["state"] == cli[0]["state"]
        assert {sid: s["status"] for sid, s in row["steps"].items()} == \
            {sid: s["status"] for sid, s in cli[0]["steps"].items()}


async def test_a_description_that_starts_with_a_dash_is_a_description(
        trusted: LanguageClient) -> None:
    """The server put the description before the options, so `-x …` was read as an
    option and `baton run` refused to start."""
    started = await command(trusted, "workflow.start",
                            {"description": "--scope=debug-only -x fix it",
                             "scope": "research-only", "complexity": 1})
    done = await wait_changed(trusted, finished(started["workflow_id"]))
    assert done["event"]["status"] == "complete"
    status = await command(trusted, "workflow.status", {"id": started["workflow_id"]})
    assert status["description"] == "--scope=debug-only -x fix it"


async def test_untrusted_workspace_launches_nothing(untrusted: LanguageClient) -> None:
    with pytest.raises(JsonRpcException) as err:
        await command(untrusted, "workflow.start", {"description": "Add a thing"})
    assert "not trusted" in err.value.message and "baton.trustWorkspace" in err.value.message
    assert await command(untrusted, "workflow.list") == []
    assert not (untrusted.workspace_root / ".claude" / "data" / "checkpoints").exists() or \
        not any((untrusted.workspace_root / ".claude" / "data" / "checkpoints").iterdir())


async def test_cancel_in_an_untrusted_workspace_signals_no_bystander(
        untrusted: LanguageClient) -> None:
    """A repository plants a workflow whose `lock` links to a live workflow's lock and
    whose run.json names an unrelated process as engine and agent: `workflow.cancel` (it
    runs `baton cancel`, untrusted workspace or not) must not signal that process."""
    root = untrusted.workspace_root
    runs = root / ".claude" / "data" / "checkpoints"
    live_lock = runs / "live" / "lock"
    live_lock.parent.mkdir(parents=True)
    holder = subprocess.Popen(  # the live workflow's engine, as far as its lock tells
        [sys.executable, "-c", "import fcntl, os, signal, sys\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\nsignal.pause()",
         str(live_lock)], stdout=subprocess.PIPE, text=True)
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        (runs / "atk").mkdir()
        (runs / "atk" / "lock").symlink_to("../live/lock")
        (runs / "atk" / "run.json").write_text(json.dumps(
            {"pid": bystander.pid, "pgids": [bystander.pid]}))
        result = await command(untrusted, "workflow.cancel", {"id": "atk"})
        assert bystander.poll() is None, result
        assert result["code"] == 1 and "nothing signalled" in result["message"] and \
            "symbolic link" in result["message"], result
    finally:
        for proc in (bystander, holder):
            proc.kill()
            proc.wait(10)


@pytest.mark.parametrize("name,args,needle", [
    ("workflow.start", [], "description"),
    ("workflow.start", [{"description": "x", "scope": "everything"}], "scope"),
    ("workflow.start", [{"description": "x", "complexity": 9}], "complexity"),
    ("workflow.start", [{"description": "x", "bogus": 1}], "bogus"),
    ("workflow.start", ["just a string"], "one object"),
    ("workflow.status", [{"id": "../../etc"}], "invalid workflow id"),
    ("workflow.status", [{"id": "nope_123"}], "no workflow"),
    ("workflow.resume", [{"id": "x", "at": -1}], "at"),
])
async def test_bad_arguments_are_invalid_params(untrusted: LanguageClient, name: str,
                                                args: list[Any], needle: str) -> None:
    with pytest.raises(JsonRpcException) as err:
        await command(untrusted, name, *args)
    assert err.value.code == -32602
    assert needle in err.value.message and f"baton.server.{name}" in err.value.message


@pytest.mark.workspace_files({BEHAVIOUR: json.dumps({"research.1": {"hang": True}})})
@pytest.mark.parametrize("via", ["command", "progress"])
async def test_cancel_a_hanging_workflow(trusted: LanguageClient, via: str) -> None:
    if via == "progress" and not has_progress(trusted):
        pytest.skip("the client does not support work-done progress")
    started = await command(trusted, "workflow.start",
                            {"description": "Hang", "scope": "research-only",
                             "complexity": 1})
    wid = started["workflow_id"]
    await wait_changed(trusted, lambda p: p["workflow_id"] == wid and
                       p["event"]["event"] == "step" and p["event"]["status"] == "running")
    if via == "command":
        result = await command(trusted, "workflow.cancel", {"id": wid})
        assert result["workflow_id"] == wid and result["code"] == 0, result
    else:
        token = next(t for t, r in trusted.progress_reports.items()
                     if r and r[0].title == "Baton: Hang")
        trusted.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(
            token=token))
    done = await wait_changed(trusted, finished(wid))
    assert done["event"]["status"] == "cancelled"
    status = await command(trusted, "workflow.status", {"id": wid})
    assert status["status"] == "cancelled"
    preview = await command(trusted, "workflow.previewResume", {"id": wid})
    assert preview["status"] == "cancelled"
    (trusted.workspace_root / BEHAVIOUR).write_text("{}")
    resumed = await command(trusted, "workflow.resume", {"id": wid})
    assert resumed["workflow_id"] == wid and resumed["pid"] != started["pid"]
    await wait_changed(trusted, lambda p: finished(wid)(p) and
                       p["event"]["status"] == "complete")
    assert (await command(trusted, "workflow.status", {"id": wid}))["status"] == "complete"


@pytest.mark.workspace_files({BEHAVIOUR: json.dumps(
    {"plan": {"exit": 3, "task_error": "validation_error - Empty prompt"}})})
async def test_preview_resume_of_a_failed_workflow(trusted: LanguageClient) -> None:
    started = await command(trusted, "workflow.start",
                            {"description": "Plan auth", "scope": "research-and-plan",
                             "complexity": 1})
    wid = started["workflow_id"]
    done = await wait_changed(trusted, finished(wid))
    assert done["event"]["status"] == "failed"
    preview = await command(trusted, "workflow.previewResume", {"id": wid})
    assert preview["status"] == "failed" and preview["failed_state"] == "plan"
    assert [s["step"] for s in preview["skip"]] == ["research.1"]
    assert "plan" in [s["step"] for s in preview["rerun"]]
    status = await command(trusted, "workflow.status", {"id": wid})
    assert status["status"] == "failed"


@pytest.mark.workspace_files({BEHAVIOUR: json.dumps(
    {"plan": {"exit": 3, "task_error": "validation_error - Empty prompt"}})})
async def test_resume_of_a_checkpoint_signed_elsewhere_asks_for_trust(
        trusted: LanguageClient, tmp_path: Path) -> None:
    """A failed run whose checkpoints another key signed (another machine, another user):
    the preview says why it is not trusted, the confirming button is "Trust checkpoint and
    resume", and only that resumes it (the engine gets `--trust-checkpoint`)."""
    root = trusted.workspace_root  # type: ignore[attr-defined]
    env = {**os.environ, "BATON_DATA_DIR": str(tmp_path / "another-machine")}
    run = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton_lsp", "run", "--scope", "research-and-plan",
        "--complexity", "1", "--workspace", str(root), "--events", "--", "Plan auth",
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(run.communicate(), TIMEOUT)
    assert run.returncode == 1, err.decode()
    wid = next(e["workflow_id"] for e in map(json.loads, out.decode().splitlines())
               if e.get("workflow_id"))
    preview = await command(trusted, "workflow.previewResume", {"id": wid})
    assert preview["signature"] == "foreign" and "another machine" in preview["untrusted"]
    (root / BEHAVIOUR).write_text("{}")
    trusted.answer = "Resume"  # type: ignore[attr-defined]
    refused = await command(trusted, "workflow.resumeWithPreview", {"id": wid})
    asked = trusted.asked[-1]  # type: ignore[attr-defined]
    assert refused["resumed"] is False
    assert [a.title for a in asked.actions] == ["Trust checkpoint and resume", "Cancel"]
    assert "Not trusted:" in asked.message and "another machine" in asked.message
    trusted.answer = "Trust"  # type: ignore[attr-defined]
    resumed = await command(trusted, "workflow.resumeWithPreview", {"id": wid})
    assert resumed["resumed"] is True and resumed["workflow_id"] == wid
    await wait_changed(trusted, lambda p: finished(wid)(p) and
                       p["event"]["status"] == "complete")
    status = await command(trusted, "workflow.status", {"id": wid})
    assert status["status"] == "complete" and status["signature"] == "trusted"


async def test_settings_push_keeps_trust_and_applies_the_log_level(
        trusted: LanguageClient) -> None:
    """A `didChangeConfiguration` carrying the `baton` section replaces the settings: trust
    given at initialize stays, and `logLevel` takes effect without a restart."""
    trusted.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"baton": {"logLevel": "debug"}}))
    info = await command(trusted, "debugInfo")
    assert info["log_level"] == "DEBUG" and info["settings"]["trusted"] is True
    trusted.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"baton": {"logLevel": "warning"}}))
    info = await command(trusted, "debugInfo")
    assert info["log_level"] == "WARNING" and info["settings"]["trusted"] is True


async def test_a_run_waiting_for_the_repository_says_for_whom(trusted: LanguageClient,
                                                              ) -> None:
    """Another run holds the repository's integration lock: the editor is told (a
    `waiting` change and the progress message) whom this run waits for, and the run lands
    once the lock is free."""
    import subprocess

    from baton_lsp.workflow.repolock import INTEGRATION_LOCK, RepoLock

    root = trusted.workspace_root  # type: ignore[attr-defined]
    ident = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *ident, *argv], cwd=root, check=True, capture_output=True)
    lock = RepoLock(root / ".git", INTEGRATION_LOCK)
    assert lock.try_acquire({"workflow_id": "someone-else", "what": "merging wave 2"})
    try:
        plan = root / ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"
        started = await command(trusted, "workflow.start",
                                {"description": "Implement it", "scope": "implement-only",
                                 "plan": str(plan)})
        wid = started["workflow_id"]
        waiting = await wait_changed(trusted, lambda p: p["workflow_id"] == wid
                                     and p["event"]["event"] == "waiting")
        assert waiting["event"]["holder"] == "someone-else"
        if has_progress(trusted):
            async def told() -> None:
                while not any(r.kind == "report" and r.message and
                              "waiting for workflow someone-else (merging wave 2)" in r.message
                              for reports in trusted.progress_reports.values()
                              for r in reports):
                    await trusted.wait_for_notification(types.PROGRESS)

            await asyncio.wait_for(told(), TIMEOUT)
    finally:
        lock.release()
    done = await wait_changed(trusted, finished(wid))
    assert done["event"]["status"] == "complete", done


async def test_what_a_run_reconciles_reaches_the_editor(trusted: LanguageClient) -> None:
    """A run killed while it held the worktree lock left `packed-refs.lock` (as `git branch
    -D` cut off does). The next run removes it before its own git work and the editor is
    told — a `reconciled` change, the progress message — and the workflow's status row keeps
    it (the Workflows view lists it)."""
    import subprocess

    from baton_lsp.workflow.repolock import WORKTREE_LOCK
    from tests.dead_holder import kill_holder

    root = trusted.workspace_root  # type: ignore[attr-defined]
    ident = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *ident, *argv], cwd=root, check=True, capture_output=True)
    kill_holder(root / ".git", WORKTREE_LOCK, {"workflow_id": "dead-run"},
                leave=("packed-refs.lock",))
    plan = root / ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"
    started = await command(trusted, "workflow.start",
                            {"description": "Implement it", "scope": "implement-only",
                             "plan": str(plan)})
    wid = started["workflow_id"]
    found = await wait_changed(trusted, lambda p: p["workflow_id"] == wid
                               and p["event"]["event"] == "reconciled")
    assert "packed-refs.lock" in found["event"]["what"]
    assert "dead-run" in found["event"]["what"]
    done = await wait_changed(trusted, finished(wid))
    assert done["event"]["status"] == "complete", done
    if has_progress(trusted):
        assert any(r.kind == "report" and r.message and "reconciled: removed the stale"
                   in r.message for reports in trusted.progress_reports.values()
                   for r in reports)
    status = await command(trusted, "workflow.status", {"id": wid})
    assert any("packed-refs.lock" in r["what"] for r in status["reconciled"])
    assert not (root / ".git/packed-refs.lock").exists()


@pytest.mark.workspace_files({BEHAVIOUR: json.dumps(
    {"plan": {"exit": 3, "task_error": "validation_error - Empty prompt"}})})
async def test_step_log_resolves_the_failed_steps_agent_log(trusted: LanguageClient) -> None:
    started = await command(trusted, "workflow.start",
                            {"description": "Plan auth", "scope": "research-and-plan",
                             "complexity": 1})
    wid = started["workflow_id"]
    assert (await wait_changed(trusted, finished(wid)))["event"]["status"] == "failed"
    log = await command(trusted, "step.log", {"id": wid, "step": "plan"})
    assert log["attempt"] >= 1
    path = Path(log["path"])
    assert path.name == f"plan.attempt-{log['attempt']}.log" and path.is_file()
    assert path.is_relative_to(trusted.workspace_root.resolve())
    with pytest.raises(JsonRpcException) as err:  # a step the run never had
        await command(trusted, "step.log", {"id": wid, "step": "implement.phase-9"})
    assert "no step" in err.value.message
    with pytest.raises(JsonRpcException) as err:  # no path out of the logs directory
        await command(trusted, "step.log", {"id": wid, "step": "../../../../etc/passwd"})
    assert err.value.code == -32602 and "step" in err.value.message


async def test_rerun_repeats_the_request_with_the_pinned_settings(
        trusted: LanguageClient) -> None:
    from baton_lsp.runs.record import read_record
    from baton_lsp.runs.store import CheckpointStore

    started = await command(trusted, "workflow.start",
                            {"description": "Research auth", "scope": "research-only",
                             "complexity": 1})
    wid = started["workflow_id"]
    assert (await wait_changed(trusted, finished(wid)))["event"]["status"] == "complete"
    # The configuration changes afterwards: the re-run keeps what the run used.
    config = trusted.workspace_root / ".claude" / "baton.toml"
    config.write_text(config.read_text().replace("timeout = 30\n", "timeout = 77\n")
                      .replace('runner = "script"', 'runner = "codex"'))
    history = await command(trusted, "workflow.checkpoints", {"id": wid})
    assert [row["n"] for row in history] == sorted(row["n"] for row in history)
    assert all(row["ok"] for row in history) and history[-1]["status"] == "complete"
    again = await command(trusted, "workflow.rerun", {"id": wid})
    new = again["workflow_id"]
    assert again["rerun_of"] == wid and new != wid
    assert (await wait_changed(trusted, finished(new)))["event"]["status"] == "complete"

    def record(w: str) -> Any:
        entry = CheckpointStore(trusted.workspace_root, w).latest()
        return read_record(entry.data or {}, str(entry.path))

    old, rerun = record(wid), record(new)
    assert rerun.workflow_description == "Research auth" and rerun.scope == "research-only"
    assert rerun.baton.request.complexity == 1
    assert rerun.baton.identity is not None and old.baton.identity is not None
    assert rerun.baton.identity.runner == "script"
    assert rerun.baton.identity.settings == old.baton.identity.settings
    assert rerun.baton.identity.settings["timeout"] == 30
    with pytest.raises(JsonRpcException) as err:
        await command(trusted, "workflow.rerun", {"id": "nope_123"})
    assert "no workflow" in err.value.message
