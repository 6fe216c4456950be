"""One agent step: skip it when done and still valid, otherwise launch the role's agent
through its runner, read its signals, judge the outcome (exit, timeout, hard barrier,
TASK_ERROR, the caller's check) and retry transient and permanent failures within the
configured attempts. A finished step is checkpointed the moment it is done."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..model.states import State, StepStatus
from ..runs import confine
from ..runs.digest import sha256_file
from ..runs.record import StepRecord, unset
from ..runs.records import utc_now
from ..terminal import terminal_safe
from . import accounting, otlp
from .barrier import check_artifact, check_listed
from .executors import REMOTE_ROLES, StepLaunch, WorkerLost
from .failures import FATAL, PERMANENT, TRANSIENT, Cancelled, EngineError, StepFailure
from .layout import contained
from .process import AgentLaunchError, ProcessOutcome
from .prompt import build_prompt
from .run import Run
from .runners import (
    HopelessRetry,
    Invocation,
    Runner,
    RunResult,
    classify_outcome,
    fix_for,
    refusals,
)
from .runners.base import str_or_none
from .shipping import Shipment
from .signals import SignalReader, error_context_in, listed_paths

log = logging.getLogger(__name__)

Verify = Callable[[Path, SignalReader], "str | None"]


@dataclass
class StepSpec:
    """What a state handler asks of one agent step."""

    sid: str
    state: State
    role: str
    artifact: Path
    extra: dict[str, str] = field(default_factory=dict)
    inputs: dict[str, str | None] = field(default_factory=dict)
    timeout: float | None = None
    verify: Verify | None = None
    metadata: Callable[[Path], dict[str, Any]] | None = None
    saved_as: str | None = None
    fields: Callable[[StepRecord], None] | None = None
    """Sets on the step what the handler learnt from the agent (its parsed answer, a
    phase's git record), stored in the same checkpoint that records it done: a resume that
    skips the step still has it. Called before the step is marked done; it may fail it."""
    cwd: Path | None = None
    """The agent's working directory (default: the workspace; a phase's own worktree)."""
    extra_dirs: tuple[Path, ...] = ()
    listed_by: str | None = None
    """A signal whose listed files stand for the artifact when the agent prints it with
    files (the document agent's `DOCUMENTATION_UPDATED: [files]`, seed 000): the hard
    barrier is then those files, recorded as the step's `updated_files`."""
    returned_by: str | None = None
    """A signal whose JSON object is the artifact when the agent returns it instead of
    writing the file (the seeds' research supervisor returns `SUPERVISOR_COMPLETE: {…}`
    and writes no summary): Baton then writes the payload at the artifact's path, so the
    barrier, the checkpoint and a resume see one file as for any other step."""
    shipment: Shipment | None = None
    """An implement phase that runs on another machine (`Run.remote`): what its worker
    checks out and commits, and where the executor puts the bundle it returns
    (`Shipment.receive`); `fields` lands it."""


def write_returned(root: Path, artifact: Path, reader: SignalReader, signal: str) -> bool:
    """Write the JSON object the agent returned in `signal` as `artifact` when it left that
    path empty (never over a file, never through a link); whether it did."""
    sig = reader.first(signal)
    if sig is None:
        return False
    try:
        payload = json.loads(sig.value)
    except ValueError:
        return False
    if not isinstance(payload, dict):
        return False
    text = (f"# {signal.replace('_', ' ').title()}\n\nWhat the agent returned in `{signal}` "
            "(written by Baton: the agent wrote no file of its own).\n\n```json\n"
            f"{json.dumps(payload, indent=2, ensure_ascii=False)}\n```\n")
    try:
        confine.create_exclusive(root, artifact, text.encode("utf-8"))
    except FileExistsError:
        return False
    except OSError as exc:  # a link or FIFO planted at the name: the barrier says so
        log.warning("not writing %s's payload at %s: %s", signal, artifact,
                    confine.describe(exc))
        return False
    return True


async def agent_step(run: Run, spec: StepSpec) -> SignalReader | None:
    """Run one agent step (None when skipped as done and valid) with retries; on success
    record its artifact hash, its signals and its context account — what it passed up
    (signal lines + extracted metadata) versus the whole artifact."""
    sid = spec.sid
    if run.skippable(sid):
        run.say(f"[{sid}] already done; skipped")
        return None
    artifact = contained(run.root, spec.artifact, "artifact path")
    kept = _finished_unrecorded(run, spec, artifact)
    if kept is not None:
        return kept
    step = run.steps[sid] = StepRecord(state=spec.state.value, role=spec.role,
                                       status=StepStatus.RUNNING, attempts=0,
                                       artifact=str(artifact), inputs=spec.inputs,
                                       started_at=utc_now())
    assert run.store is not None
    log_dir = run.store.dir / "logs"
    attempts = run.settings.attempts
    last: StepFailure | None = None
    for attempt in range(1, attempts + 1):
        if run.cancel_event.is_set():
            raise Cancelled()
        over = over_budget(run)
        if over is not None:
            last = StepFailure(sid, FATAL, over, "execution_error", {"reason": "budget_exceeded"})
            run.record_failure(step, last)
            step.status = StepStatus.FAILED
            raise last
        step.attempts = attempt
        reader = SignalReader()
        try:
            with confine.open_new(run.root, log_dir / f"{sid}.attempt-{attempt}.log") as fd, \
                    open(fd, "w", encoding="utf-8", closefd=False) as log_file:
                runner, out, final, hopeless = await _attempt(run, spec, step, artifact,
                                                              attempt, reader, log_file)
        except WorkerLost as exc:  # the cluster's fault: Baton's own attempts retry it
            if exc.worker is not None:
                step.workers = {**(step.workers or {}), str(attempt): exc.worker}
            last = StepFailure(sid, TRANSIENT, str(exc), "execution_error",
                               {"worker_lost": True, **({"worker": exc.worker}
                                                        if exc.worker else {})})
            run.record_failure(step, last)
            run.launched.pop(sid, None)
            if attempt == attempts:
                break
            delay = run.delay(attempt)
            run.say(f"[{sid}] {last.message}; retrying in {delay:.1f} s")
            await run.sleep(delay)
            continue
        if spec.returned_by is not None and out.exit_code == 0 and not out.timed_out \
                and not out.stalled and hopeless is None:
            write_returned(run.root, artifact, reader, spec.returned_by)
        last = judge(run, sid, runner, out, final, reader, artifact, spec.verify, hopeless,
                     spec.listed_by)
        if last is None:
            try:
                _record_done(run, spec, step, artifact, reader, attempt,
                             updated_files(run.root, reader, spec.listed_by))
            except StepFailure as exc:  # what the handler does with the result failed
                run.record_failure(step, exc)
                step.status = StepStatus.FAILED
                raise
            run.launched.pop(sid, None)  # recorded: the checkpoint says what it did
            return reader
        run.record_failure(step, last)
        run.launched.pop(sid, None)
        if last.failure != TRANSIENT or attempt == attempts:
            break
        delay = run.delay(attempt)
        run.say(f"[{sid}] {last.message}; retrying in {delay:.1f} s")
        await run.sleep(delay)
    assert last is not None
    step.status = StepStatus.FAILED
    run.emit("step", step=sid, state=spec.state.value, status=StepStatus.FAILED,
             attempt=step.attempts, failure=last.failure, message=last.message,
             artifact=str(artifact), context=last.context)
    raise last


async def _attempt(run: Run, spec: StepSpec, step: StepRecord, artifact: Path,
                   attempt: int, reader: SignalReader, log_file: IO[str]
                   ) -> tuple[Runner, ProcessOutcome, RunResult | None, HopelessRetry | None]:
    """Launch one attempt and wait for it; the agent's text goes to its log and the reader,
    the usage its stream (or its telemetry, see `otlp`) reports to the attempt's meter. An
    API failure the CLI retries in vain (a bad key) stops the agent at once: it is returned,
    and the step fails fatal instead of waiting out the CLI's retries."""
    sid = spec.sid
    contract = run.contract(sid, spec.role, artifact, {**spec.extra,
                                                        "BATON_ATTEMPT": str(attempt)})
    prompt = build_prompt(run.root, run.settings, run.runner_name, spec.role, sid, artifact,
                          contract)
    try:
        runner = run.runner(prompt.runner)
    except ValueError as exc:
        raise EngineError(str(exc)) from None
    results: list[RunResult] = []
    meter = accounting.Meter(run.settings.prices,
                             cached_in_input=bool(getattr(runner, "cached_in_input", False)),
                             model=str_or_none(getattr(runner, "model", None)))
    stop = asyncio.Event()
    breach: list[str] = []
    hopeless: list[HopelessRetry] = []
    final_model: list[str] = []

    def halt(why: str) -> None:
        if stop.is_set():
            return
        breach.append(why)
        run.say(f"[{sid}] {why}; stopping the agent")
        stop.set()

    def take(usage: dict[str, Any] | None, model: str | None) -> None:
        if not usage:
            return
        meter.add(usage, model)  # also after the stop: what arrives then was spent too
        run.live_usage[sid] = meter.usage
        if stop.is_set():
            return
        why = budget_now(run, sid, meter)
        if why is None:
            return
        halt(why)
        # A budget the workflow's total crossed is every running sibling's too: they stop
        # now, not at their next usage report (each of which would be one more paid request).
        for other, other_halt in list(run.live_halts.items()):
            if other != sid:
                shared = budget_now(run, other, None)
                if shared is not None:
                    other_halt(shared)

    def on_line(line: str) -> None:
        event = runner.decode(line)
        for text in event.text:
            log_file.write(text + "\n")
            sig = reader.feed(text)
            if sig is not None:
                run.say(f"[{sid}] {sig.name}: {sig.value}")
                run.emit("signal", step=sid, name=sig.name, value=sig.value)
        if event.result is not None:
            results.append(event.result)
            if event.model:
                final_model.append(event.model)
        if event.hopeless is not None and not hopeless and not stop.is_set():
            hopeless.append(event.hopeless)
            run.say(f"[{sid}] {event.hopeless.message}")
            stop.set()
        take(event.usage, event.model)

    def on_record(record: otlp.Record) -> None:
        read = getattr(runner, "usage_record", None)
        found = read(record) if callable(read) else None
        if found is not None:
            take(*found)

    cwd = spec.cwd or run.root
    async with contextlib.AsyncExitStack() as stack:
        endpoint = None
        if getattr(runner, "usage_telemetry", False):
            endpoint = (await stack.enter_async_context(otlp.Receiver(on_record))).endpoint
        inv = Invocation(step_id=sid, role=spec.role, prompt=prompt.text, contract=contract,
                         cwd=cwd, model=prompt.model, fallback_model=prompt.fallback_model,
                         tools=prompt.tools, agent_name=run.settings.role(spec.role).agent,
                         extra_dirs=spec.extra_dirs, usage_endpoint=endpoint)
        try:
            launch = runner.launch(inv)
        except (ValueError, OSError, KeyError) as exc:
            failure = StepFailure(sid, FATAL, f"cannot launch the {runner.name} agent: {exc}",
                                  "agent_error")
            run.record_failure(step, failure)
            step.status = StepStatus.FAILED
            raise failure from None
        run.emit("step", step=sid, state=spec.state.value, status=StepStatus.RUNNING,
                 attempt=attempt, runner=runner.name, artifact=str(artifact))
        run.say(f"[{sid}] {runner.name} agent {inv.agent_name} (attempt {attempt}/"
                f"{run.settings.attempts})")
        start = time.monotonic()
        run.live_halts[sid] = halt
        executor = run.executor()
        # an implement step runs remotely only shipped as a bundle: its code comes back
        remote = executor.remote(spec.state.value) and spec.role in REMOTE_ROLES and (
            spec.state != State.IMPLEMENT or spec.shipment is not None)
        try:
            if remote:
                run.started_remote(sid, attempt)
            executed = await executor.execute(
                StepLaunch(workflow_id=run.workflow_id, sid=sid, state=spec.state.value,
                           attempt=attempt, runner=runner.name, root=run.root, cwd=cwd,
                           artifact=artifact, argv=launch.argv, env=launch.env,
                           stdin=launch.stdin, contract=contract,
                           timeout=spec.timeout or run.settings.timeout,
                           stall_timeout=run.settings.stall_timeout,
                           grace=run.settings.kill_grace,
                           inputs=input_files(run.root, spec, launch.temp_files),
                           remote=remote, shipment=spec.shipment),
                on_line=on_line, on_start=lambda pid: run.started(pid, sid, attempt),
                cancel=run.cancel_event, stop=stop)
        except AgentLaunchError as exc:
            failure = StepFailure(sid, FATAL, str(exc), "agent_error")
            run.record_failure(step, failure)
            raise failure from None
        finally:
            launch.cleanup()
            run.live_usage.pop(sid, None)
            run.live_halts.pop(sid, None)
    out = executed.outcome
    if executed.worker is not None:
        step.worker = executed.worker
        step.workers = {**(step.workers or {}), str(attempt): executed.worker}
    for note in executed.notes:
        run.say(f"[{sid}] {note}")
    step.duration_ms = int((time.monotonic() - start) * 1000)
    step.process_ms = round(out.duration * 1000, 2)
    final = results[-1] if results else None
    _record_usage(run, sid, step, attempt, out, meter, final,
                  final_model[-1] if final_model else None, runner.name)
    if out.cancelled:
        step.status = StepStatus.CANCELLED
        raise Cancelled()
    if out.stopped and breach and not hopeless:
        raise _budget_failure(run, sid, step, breach[0])
    return runner, out, final, (hopeless[0] if hopeless else None)


def input_files(root: Path, spec: StepSpec, temp_files: tuple[Path, ...]) -> tuple[Path, ...]:
    """The workspace files a step reads: its declared inputs that are files (a plan
    section's `plan.md#phase-N` is the plan) and the runner's own temp files (a prompt
    file); what a worker without the workspace receives."""
    paths: list[Path] = []
    for name in spec.inputs:
        path = Path(name.split("#", 1)[0])
        paths.append(path if path.is_absolute() else root / path)
    return tuple(dict.fromkeys([*paths, *temp_files]))


def budget_now(run: Run, sid: str, meter: accounting.Meter | None) -> str | None:
    """Whether the workflow's usage — what is recorded plus every attempt running now —
    or this attempt's turns (with a `meter`) have crossed a budget (the reason), or None."""
    total: dict[str, Any] = dict(run.usage.total) if run.usage is not None else {}
    for live in run.live_usage.values():
        total = accounting.add_usage(total, live)
    turns = int(meter.usage.get("turns", 0)) if meter is not None else 0
    return accounting.budget_breach(run.settings, total, turns, sid)


def _record_usage(run: Run, sid: str, step: StepRecord, attempt: int,
                  out: ProcessOutcome, meter: accounting.Meter, final: RunResult | None,
                  model: str | None, runner_name: str) -> None:
    """Record what this attempt cost on the step and in the run's totals, however it ended:
    a killed, timed-out or failed attempt was paid for too. The CLI's final account wins
    over what its stream reported on the way; a model without a price is named once."""
    usage = meter.settle(final.usage if final is not None else None, model)
    if meter.unpriced and run.settings.max_budget_usd is not None:
        note = unpriced_note(meter.unpriced, runner_name)
        if note not in (step.notes or []):
            step.notes = [*(step.notes or []), note]
            run.say(f"[{sid}] {note}")
    if not usage:
        return
    ended = ("budget" if out.stopped else "timeout" if out.timed_out else "stalled"
             if out.stalled else "cancelled" if out.cancelled else "exit")
    step.attempt_usage = [*(step.attempt_usage or []),
                          {"attempt": attempt, "ended": ended, **usage}]
    step.usage = accounting.add_usage(step.usage, usage)
    run.usage = accounting.usage_totals(run.steps)


def unpriced_note(models: set[str], runner: str) -> str:
    """Why max-budget-usd cannot see what a step's tokens cost: the model has no price, or
    Baton does not know the model (codex's and gemini's own configuration chose it)."""
    named = sorted(m for m in models if m != "?")
    parts = []
    if named:
        parts.append(f"no price for model {', '.join(named)} (add it to [workflow.prices])")
    if "?" in models:
        parts.append(f"the {runner} model is not known to Baton (set [workflow.{runner}] "
                     "model)")
    return (f"{'; '.join(parts)}: its tokens cost nothing against max-budget-usd, only "
            "max-tokens and max-turns can stop its steps")


def _budget_failure(run: Run, sid: str, step: StepRecord, why: str) -> StepFailure:
    """The step stopped at a budget: not retried, the workflow fails resumable (resume with a
    higher budget), like a step that may not start because the budget is spent."""
    failure = StepFailure(sid, FATAL, why, "execution_error",
                          {"reason": "budget_exceeded", "usage": dict(step.usage or {})})
    run.record_failure(step, failure)
    step.status = StepStatus.FAILED
    run.emit("step", step=sid, state=step.state, status=StepStatus.FAILED,
             attempt=step.attempts, failure=FATAL, message=why,
             artifact=str(step.artifact), context=failure.context)
    return failure


MTIME_SLACK = 0.05
"""Seconds a file's modification time may read before the launch it followed: the kernel
stamps files from a coarse clock (one tick, up to 10 ms, behind `time.time()`), so an
artifact written within a tick of its launch (a caller writing what a worker returned)
would otherwise look older than the launch and be run again."""


def unrecorded_work(run: Run, sid: str, artifact: Path) -> tuple[int, str] | None:
    """(attempt, the agent's log) when the previous engine launched `sid`'s agent, did not
    record the step, and its artifact passes the hard barrier and was written after the
    launch — work that may be kept (`_finished_unrecorded`); None otherwise. The implement
    state asks it first, to keep such a phase's worktree for it."""
    launched = run.launched.get(sid)
    prior = run.steps.get(sid)
    if launched is None or (prior is not None and "status" in prior.model_fields_set
                            and prior.status != StepStatus.RUNNING):
        return None
    assert run.store is not None
    try:
        if check_artifact(run.root, artifact, []) is not None or \
                artifact.stat().st_mtime < float(launched["at"]) - MTIME_SLACK:
            return None
        attempt = int(launched["attempt"])
        text = confine.read_bytes(run.root, run.store.dir / "logs" /
                                  f"{sid}.attempt-{attempt}.log").decode("utf-8", "replace")
    except (OSError, ValueError):
        return None
    return attempt, text


def _finished_unrecorded(run: Run, spec: StepSpec, artifact: Path) -> SignalReader | None:
    """A step whose agent the previous engine launched and that finished its work before
    that engine died (or after: agents outlive it in their own sessions), unrecorded: its
    artifact passes the hard barrier, was written after the launch, its inputs are the
    same and what the agent printed (its log) passes the step's checks. Kept — recorded
    done now, the handler's `fields` included (a phase's worktree committed) — instead of
    paying for the agent again. None when there is no such work."""
    sid = spec.sid
    prior = run.steps.get(sid)
    if prior is not None and "inputs" in prior.model_fields_set and prior.inputs != spec.inputs:
        return None
    found = unrecorded_work(run, sid, artifact)
    if found is None:
        return None
    attempt, text = found
    reader = SignalReader()
    for line in text.splitlines():
        reader.feed(line)
    if spec.verify is not None and spec.verify(artifact, reader) is not None:
        return None
    step = run.steps[sid] = StepRecord(state=spec.state.value, role=spec.role,
                                       status=StepStatus.RUNNING, attempts=attempt,
                                       artifact=str(artifact), inputs=spec.inputs,
                                       started_at=utc_now(),
                                       kept="its agent finished before the engine stopped")
    try:
        _record_done(run, spec, step, artifact, reader, attempt)
    except StepFailure as exc:
        run.say(f"[{sid}] the work its agent left could not be kept ({exc.message}); "
                "running it again")
        run.steps.pop(sid, None)
        return None
    run.launched.pop(sid, None)
    run.say(f"[{sid}] its agent finished before the engine stopped (attempt {attempt}): "
            "kept, not run again")
    return reader


def updated_files(root: Path, reader: SignalReader, signal: str | None) -> list[Path]:
    """The files the agent listed in `signal` (every time it printed it, in order), as
    absolute paths; [] without the signal or when it listed nothing."""
    listed = _listed(reader, signal)
    if signal is None or not listed:
        return []
    files, _ = check_listed(root, listed, signal)
    return list(dict.fromkeys(files))


def _listed(reader: SignalReader, signal: str | None) -> list[str]:
    """Every path the agent's `signal` lines list, in order, once each."""
    return list(dict.fromkeys(p for sig in reader.signals if sig.name == signal
                              for p in listed_paths(sig.value))) if signal else []


def _record_done(run: Run, spec: StepSpec, step: StepRecord, artifact: Path,
                 reader: SignalReader, attempt: int, updated: list[Path] | None = None
                 ) -> None:
    if updated:  # the listed files passed the barrier: they are what the step made
        artifact = updated[0]
        step.artifact, step.updated_files = str(artifact), [str(p) for p in updated]
    meta = spec.metadata(artifact) if spec.metadata is not None else None
    if spec.fields is not None:
        spec.fields(step)  # may fail: before "done"
    step.status, step.finished_at = StepStatus.DONE, utc_now()
    step.sha256, step.size = sha256_file(artifact, run.root), artifact.stat().st_size
    step.signals = [f"{s.name}: {s.value}" for s in reader.signals][-20:]
    step.context = accounting.step_context(reader.passed_text(), meta, artifact)
    if meta is not None:
        step.metadata = meta
    if reader.fields:
        step.brief = dict(reader.fields)
    unset(step, "failure", "message")
    run.context = accounting.aggregate(run.steps)
    # durable now, not when the state ends: a parallel sibling may still be running when
    # the engine dies, and this paid-for step must not run again
    run.save(spec.saved_as or f"step {spec.sid} done")
    run.emit("step", step=spec.sid, state=spec.state.value, status=StepStatus.DONE, attempt=attempt,
             artifact=str(artifact), checkpoint=str(run.last_checkpoint))


def over_budget(run: Run) -> str | None:
    """Why no further agent step may start (the configured budget is spent), or None."""
    return accounting.budget_breach(run.settings,
                                    run.usage.total if run.usage is not None else None)


def judge(run: Run, sid: str, runner: Runner, out: ProcessOutcome, result: RunResult | None,
          reader: SignalReader, artifact: Path, verify: Verify | None,
          hopeless: HopelessRetry | None = None, listed_by: str | None = None
          ) -> StepFailure | None:
    """How the attempt ended: None when the artifact (or the files the agent listed in
    `listed_by`) passed every check."""
    if hopeless is not None:
        return StepFailure(sid, FATAL, hopeless.message, "agent_error",
                           {"http_status": hopeless.status, "api_error": hopeless.error,
                            "fix": hopeless.fix, "stopped": out.stopped})
    if out.timed_out:
        return StepFailure(sid, TRANSIENT, f"agent timed out after {out.duration:.0f} s",
                           "timeout_error", {"timeout": True})
    if out.stalled:
        return StepFailure(sid, TRANSIENT, f"agent stalled: no output for "
                           f"{run.settings.stall_timeout:.0f} s", "timeout_error",
                           {"stalled": True})
    task_error = reader.last_error()
    if task_error is not None and not task_error.context:
        task_error.context.update(error_context_in(out.stderr_tail))
    if out.exit_code != 0 or (result is not None and not result.ok):
        if run.cancel_event.is_set():
            raise Cancelled()  # `baton cancel` signalled the group from outside
        cls = classify_outcome(runner, out, result) or PERMANENT
        msg = terminal_safe((task_error.message if task_error else None) or (
            result.message if result is not None and result.message else None) or
            last_line(out.stderr_tail) or "no error output", multiline=True,
            strip_sequences=True)
        ctx: dict[str, Any] = {"exit_code": out.exit_code,
                               **(task_error.context if task_error else {})}
        fix = fix_for(f"{out.stderr_tail}\n{msg}", runner.name) if cls == FATAL else None
        if fix:
            msg, ctx["fix"] = f"{msg} — fix: {fix}", fix
        return StepFailure(sid, cls, f"agent exited with code {out.exit_code}: {msg}",
                           task_error.error_type if task_error else "agent_error", ctx)
    listed = _listed(reader, listed_by)
    if listed:
        _, barrier = check_listed(run.root, listed, str(listed_by))
    else:
        barrier = check_artifact(run.root, artifact, reader.reported_paths())
    if barrier is not None:
        ctx = barrier.context()
        message = barrier.message
        if listed:
            ctx["listed_by"] = listed_by
        elif listed_by and reader.first(listed_by) is not None:
            message += f" ({listed_by} listed no files)"
        if task_error:
            ctx["task_error"] = f"{task_error.error_type} - {task_error.message}"
            if task_error.context:  # the agent's ERROR_CONTEXT says why it wrote nothing
                ctx["error_context"] = task_error.context
        denials = refusals(runner, result, out.stderr_tail)
        if denials:
            ctx["permission_denials"] = list(denials)
            message += f"; the {runner.name} CLI refused: {'; '.join(denials[:5])}"
        return StepFailure(sid, PERMANENT, message, "validation_error", ctx)
    if task_error:
        return StepFailure(sid, PERMANENT, f"agent reported TASK_ERROR: "
                           f"{task_error.error_type} - {task_error.message}",
                           task_error.error_type, task_error.context)
    if verify is not None:
        problem = verify(artifact, reader)
        if problem:
            return StepFailure(sid, PERMANENT, problem, "validation_error",
                               {"artifact_path": str(artifact)})
    return None


def last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
