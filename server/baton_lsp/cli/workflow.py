"""`baton run | resume | cancel | status | checkpoints | adopt`: the workflow engine from a
shell.

Each engine runs in the `baton` process itself (one workflow per process, a file lock per
workflow); `cancel` and `status` work from any other process through the checkpoint
directory, the engine's `run.json` and that lock. `status` also lists the bash system's own
checkpoint files (ids `bash:…`), and `adopt` makes a Baton run of one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import ConfigError, PathError
from ..model.states import PhaseStatus, RunStatus, Scope, StepStatus
from ..terminal import terminal_safe

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ..runs.follow import RunView
    from ..runs.record import PhaseGit
    from ..workflow.engine import Engine, Outcome

EXIT_OK, EXIT_FAILED, EXIT_ERROR, EXIT_BUSY, EXIT_CANCELLED = 0, 1, 2, 3, 130


SCOPES = tuple(scope.value for scope in Scope)


def add_parsers(sub: Any) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--workspace", "-w", type=Path, default=None,
                       help="workspace root (default: the one containing the current directory)")

    def settable(p: argparse.ArgumentParser) -> None:
        p.add_argument("--set", dest="settings", action="append", default=[],
                       metavar="TABLE.KEY=VALUE",
                       help="override a configuration value for this run, e.g. "
                       "workflow.timeout=600 (VALUE is TOML; bare words are strings)")

    run = sub.add_parser("run", help="run a workflow: research, plan, implement in waves, test, "
                         "debug, document")
    run.add_argument("description", help="what the workflow should do (passed to agents as "
                     "data, never through a shell)")
    run.add_argument("--scope", default=None, choices=SCOPES,
                     help="default: the classifier agent's, else guessed from the description's "
                     "keywords (full-implementation when nothing matches)")
    run.add_argument("--complexity", type=int, default=None, help="research topics, 1-4 "
                     "(default: classified; 2 unless the description asks for more or less)")
    run.add_argument("--topic", action="append", default=[], help="a research topic (repeat); "
                     "default: derived from the description")
    run.add_argument("--plan", help="existing plan (implement-only, test-and-debug, "
                     "research-and-revise)")
    run.add_argument("--runner", help="auto, claude, codex, gemini, opencode, command or script "
                     "(default: [workflow] runner, else auto: the first agent CLI installed "
                     "and logged in; script is the offline demo agent)")
    run.add_argument("--id", dest="workflow_id", type=workflow_id_arg,
                     help="workflow id (default: generated)")
    run.add_argument("--max-parallel", type=int, help="phases of one wave run at once")
    run.add_argument("--quiet", "-q", action="store_true", help="only the final line")
    run.add_argument("--events", action="store_true", help="progress as JSON lines on stdout "
                     "(for editors and scripts) instead of text")
    settable(run)
    common(run)

    res = sub.add_parser("resume", help="resume a failed or interrupted workflow")
    res.add_argument("workflow_id", nargs="?", help="default: the most recent unfinished one")
    res.add_argument("--at", type=int, help="resume from checkpoint number N of its history")
    res.add_argument("--force", action="store_true", help="resume despite safe-resume problems")
    res.add_argument("--trust-checkpoint", action="store_true",
                     help="resume a checkpoint this user's Baton did not sign (written on "
                     "another machine or by another user, edited, or unsigned)")
    res.add_argument("--runner", help="override the runner the workflow started with "
                     "(recorded in its checkpoint)")
    res.add_argument("--dry-run", action="store_true", help="show what would be skipped and "
                     "what would run again, and change nothing")
    res.add_argument("--json", action="store_true", help="with --dry-run: as JSON")
    res.add_argument("--quiet", "-q", action="store_true")
    res.add_argument("--events", action="store_true", help="progress as JSON lines")
    settable(res)
    common(res)

    rer = sub.add_parser("rerun", help="run a finished workflow again as a new workflow: the "
                         "same request, runner and settings as recorded in its checkpoint")
    rer.add_argument("workflow_id")
    rer.add_argument("--quiet", "-q", action="store_true", help="only the final line")
    rer.add_argument("--events", action="store_true", help="progress as JSON lines")
    common(rer)

    can = sub.add_parser("cancel", help="stop a running workflow (resumable)")
    can.add_argument("workflow_id")
    can.add_argument("--grace", type=float, default=10.0, help="seconds before SIGKILL")
    common(can)

    st = sub.add_parser("status", help="workflows of this workspace, or one in detail")
    st.add_argument("workflow_id", nargs="?")
    st.add_argument("--json", action="store_true")
    common(st)

    ck = sub.add_parser("checkpoints", help="the checkpoint history of a workflow")
    ck.add_argument("workflow_id")
    ck.add_argument("--json", action="store_true")
    common(ck)

    ad = sub.add_parser("adopt", help="make a Baton workflow of a bash-system checkpoint (the "
                        "file itself is kept unchanged), to `baton resume` it")
    ad.add_argument("checkpoint", help="a `bash:` id from `baton status`, or the checkpoint "
                    "file under .claude/")
    ad.add_argument("--plan", help="the plan to work on when the checkpoint's is missing or "
                    "has moved (rebinds it)")
    ad.add_argument("--scope", default=None, choices=SCOPES, help="default: the checkpoint's "
                    "(implement-only for an implement or build checkpoint of schema 1.x)")
    ad.add_argument("--force", action="store_true", help="adopt despite safe-resume problems "
                    "(failing tests, last error, status, age, plan edited)")
    ad.add_argument("--id", dest="workflow_id", type=workflow_id_arg,
                    help="id of the new workflow (default: generated)")
    ad.add_argument("--json", action="store_true")
    common(ad)


def workflow_id_arg(value: str) -> str:
    """An id for a new workflow: a usage error (exit 2) when it could not name a checkpoint
    directory, rather than an "internal error" from the store."""
    from ..workflow.isolation import workflow_id_problem  # loaded for this command alone

    why = workflow_id_problem(value)
    if why is not None:
        raise argparse.ArgumentTypeError(f"invalid workflow id {value!r}: {why}")
    return value


def _root(args: argparse.Namespace) -> Path:
    from ..workspace.discovery import find_root  # loaded for this command alone

    if args.workspace is not None:
        root = args.workspace
        if not root.is_dir():
            raise PathError(f"workspace {root} is not a directory")
        return Path(os.path.realpath(root))
    found = find_root(Path.cwd())
    if found is None:
        raise PathError("no .claude/ directory here or above; pass --workspace")
    return Path(os.path.realpath(found))


def parse_settings(items: list[str]) -> dict[str, Any]:
    """`--set workflow.timeout=600` / `--set workflow.claude.fallback-model=haiku` items → a
    load_config overrides dict (tables nested like the files). Raises ConfigError on a
    malformed item."""
    import tomllib  # loaded for this command alone

    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        parts = [p.strip() for p in key.split(".")]
        if not sep or not all(parts):
            raise ConfigError(f"--set {item!r}: expected TABLE.KEY=VALUE or KEY=VALUE")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw  # a bare word: a string
        slot = out
        for i, part in enumerate(parts[:-1]):
            slot = slot.setdefault(part, {})
            if not isinstance(slot, dict):
                table = ".".join(parts[:i + 1])
                raise ConfigError(f"--set {item!r}: {table} is set as a value and a table")
        if isinstance(slot.get(parts[-1]), dict):
            raise ConfigError(f"--set {item!r}: {key.strip()} is set as a value and a table")
        slot[parts[-1]] = value
    return out


def show(line: str, file: TextIO | None = None) -> None:
    """print() for one line of human-readable output: descriptions, messages, paths and ids
    come from files and checkpoints, so what could drive the terminal is shown escaped (a
    newline too: a value cannot forge a line of its own)."""
    print(terminal_safe(line), file=file)


_reader_gone = False


def emit(line: str) -> None:
    """Print a progress line; when whoever reads them is gone (an editor that crashed or
    was restarted), carry on silently — the workflow must not die with its reader."""
    global _reader_gone
    if _reader_gone:
        return
    try:
        print(line, flush=True)
    except (BrokenPipeError, ConnectionResetError, ValueError):
        _reader_gone = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):  # exit-time flushes must not fail either
            with contextlib.suppress(OSError, ValueError):
                os.dup2(devnull, stream.fileno())
        os.close(devnull)


def _engine(args: argparse.Namespace, root: Path) -> Any:
    # loaded for this command alone
    from ..model.events import Event, LogEvent, to_json
    from ..workflow.engine import Engine
    from ..workspace.config import load_config

    overrides = parse_settings(getattr(args, "settings", []) or [])
    config = load_config(root, overrides)
    if getattr(args, "max_parallel", None):
        config.workflow.max_parallel = max(1, args.max_parallel)
    quiet = getattr(args, "quiet", False)
    events = getattr(args, "events", False)

    def say(line: str) -> None:
        if events:
            emit(to_json(LogEvent(event="log", text=line)))
        elif not quiet:  # engine lines quote plans, agents and agent output; some are several
            emit(terminal_safe(line, multiline=True))

    def event(data: Event) -> None:
        emit(to_json(data))

    engine = Engine(root, config, runner=getattr(args, "runner", None), say=say,
                    command=f"baton {args.command}", events=event if events else None,
                    overrides=overrides)
    engine.quiet = quiet
    return engine


def _drive(engine: Engine, coro_factory: Callable[[], Awaitable[Outcome]]) -> int:
    # loaded for this command alone
    from ..runs.store import WorkflowBusy
    from ..workflow.cancel import install_signal_handlers
    from ..workflow.engine import EngineError
    from ..workflow.failures import StartRefused

    async def main() -> Outcome:
        install_signal_handlers(engine.cancel)
        return await coro_factory()

    try:
        import asyncio  # only `baton run`/`resume` need an event loop (start-up speed)

        outcome = asyncio.run(main())
    except WorkflowBusy as exc:
        show(f"baton: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except EngineError as exc:  # refused before anything was written
        show(f"baton: error: {exc}", file=sys.stderr)
        return exc.exit_code if isinstance(exc, StartRefused) else EXIT_ERROR
    from ..runs.checkpoint import CheckpointError  # loaded for this command alone

    if isinstance(outcome, CheckpointError):  # pragma: no cover
        return EXIT_ERROR
    if engine.events is None and not getattr(engine, "quiet", False) and engine.holds_record:
        from ..workflow.report import render  # loaded for this command alone

        print(terminal_safe(render(engine.record, engine.root), multiline=True),
              flush=True)
    if engine.events is None:
        show(f"{outcome.workflow_id}: {outcome.status}"
             + (", needs attention" if outcome.attention else "")
             + f" ({outcome.state.value})"
             + (f" — checkpoint {outcome.checkpoint}" if outcome.checkpoint else ""))
    return outcome.exit_code


def cmd_run(args: argparse.Namespace) -> int:
    from ..workflow.engine import RunRequest  # loaded for this command alone

    root = _root(args)
    engine = _engine(args, root)
    req = RunRequest(description=args.description,
                     scope=Scope(args.scope) if args.scope else None,
                     complexity=args.complexity, topics=args.topic, plan_path=args.plan,
                     workflow_id=args.workflow_id)
    return _drive(engine, lambda: engine.start(req))


def _latest_unfinished(root: Path) -> str | None:
    # loaded for this command alone
    from ..runs.record import RecordError, read_record
    from ..runs.store import CheckpointStore, list_workflows

    best: tuple[float, str] | None = None
    for wid in list_workflows(root):
        store = CheckpointStore(root, wid)
        try:
            entry = store.latest()
        except Exception:
            continue
        try:
            record = read_record(entry.data or {}, str(entry.path))
        except RecordError:
            continue
        if record.status != RunStatus.COMPLETE:
            mtime = entry.path.stat().st_mtime
            if best is None or mtime > best[0]:
                best = (mtime, wid)
    return best[1] if best else None


def cmd_rerun(args: argparse.Namespace) -> int:
    """`baton run` with what the workflow's checkpoint recorded (runs/rerun.py), through the
    same parser and handler as a typed `baton run`."""
    # loaded for this command alone
    from ..runs.rerun import NotRerunnable, rerun_args
    from .main import main

    root = _root(args)
    try:
        opts, description = rerun_args(root, args.workflow_id)
    except NotRerunnable as exc:
        print(terminal_safe(f"baton: cannot re-run: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    flags = [f for f, on in (("--quiet", args.quiet), ("--events", args.events)) if on]
    return main([*opts, *flags, f"--workspace={root}", "--", description])


def cmd_resume(args: argparse.Namespace) -> int:
    from ..runs.checkpoint import CheckpointError  # loaded for this command alone

    root = _root(args)
    wid = args.workflow_id or _latest_unfinished(root)
    if wid is None:
        print("baton: nothing to resume: no unfinished workflow in this workspace",
              file=sys.stderr)
        return EXIT_ERROR
    engine = _engine(args, root)
    if args.dry_run:
        from ..workflow.engine import EngineError  # loaded for this command alone

        try:
            plan = engine.preview_resume(wid, args.at)
        except (CheckpointError, EngineError) as exc:
            show(f"baton: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if args.json:
            print(json.dumps(plan, indent=2))
            return EXIT_OK
        show(f"{wid}: {plan['status']} in {plan['failed_state']}; resume would restart in "
             f"{plan['resume_state']} from checkpoint {plan['checkpoint']}")
        show(f"  runner: {plan['runner']} (from the checkpoint)" if plan.get("runner") else
             "  runner: from the configuration (the checkpoint predates recorded run "
             "settings)")
        for item in plan["skip"]:
            show(f"  skip    {item['step']}")
        for item in plan["rerun"]:
            show(f"  run     {item['step']} — {item['reason']}")
        if plan.get("iteration"):
            it = plan["iteration"]
            show(f"  implement continues at iteration {it['next']}/{it['max_iterations']} "
                 f"(remaining {it.get('work_remaining') or 'nothing'}"
                 + (f", halted: {it['halt_reason']}" if it.get("halt_reason") else "") + ")"
                 + ("; that is past max-iterations: add --set workflow.max-iterations=N"
                    if it["next"] > it["max_iterations"] else ""))
        for problem in plan["problems"]:
            show(f"  needs --force: {problem}")
        if plan.get("untrusted"):
            show(f"  needs --trust-checkpoint: {plan['untrusted']}")
        for where in plan.get("outside") or []:
            show(f"  refused (outside the workspace): {where}")
        if plan["running"]:
            print("  the workflow is running now: resume would be refused")
        return EXIT_OK
    try:
        return _drive(engine, lambda: engine.resume(wid, at=args.at, force=args.force,
                                                    trust=args.trust_checkpoint))
    except CheckpointError as exc:
        show(f"baton: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


def cmd_cancel(args: argparse.Namespace) -> int:
    from ..workflow.cancel import cancel_workflow  # loaded for this command alone

    root = _root(args)
    try:
        message, code = cancel_workflow(root, args.workflow_id, args.grace)
    except Exception as exc:
        show(f"baton: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    show(message, file=sys.stderr if code else sys.stdout)
    return code


def cmd_status(args: argparse.Namespace) -> int:
    # loaded for this command alone
    from ..runs.follow import read_view
    from ..runs.status import as_json, views
    from ..runs.store import list_workflows, valid_id
    from ..workflow.worktrees import live_worktrees

    root = _root(args)
    if args.workflow_id:
        if not valid_id(args.workflow_id) or args.workflow_id not in list_workflows(root):
            return _foreign_status(root, args)
        view = read_view(root, args.workflow_id)
        trees = [t for t in live_worktrees(root) if t["workflow_id"] == args.workflow_id]
        if args.json:
            print(json.dumps({**as_json(view), "worktrees": trees}, indent=2))
            return EXIT_OK
        _show_run(view, trees)
        return EXIT_OK
    every = views(root)
    trees = live_worktrees(root)
    mine = {v.workflow_id: [t for t in trees if t["workflow_id"] == v.workflow_id]
            for v in every if v.foreign is None}
    if args.json:
        rows = [as_json(v) for v in every]
        for row in rows:
            if row["origin"] == "baton":
                row["worktrees"] = mine[str(row["workflow_id"])]
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    _show_list(every, mine)
    return EXIT_OK


def _show_run(view: RunView, trees: list[dict[str, str | None]]) -> None:
    """`baton status ID`: one Baton workflow in detail, from its view."""
    # loaded for this command alone
    from ..workflow.accounting import format_usage, reduction_text

    record = view.record
    show(f"{view.workflow_id}  {view.status}  state={view.state}  "
         f"scope={view.scope}{'  (running)' if view.locked else ''}")
    baton = record.baton if record is not None else None
    lines = {"description": view.description, "problem": view.problem,
             "topic_dir": baton.paths.topic_dir if baton else None,
             "plan": baton.paths.plan if baton else None,
             "last_error": record.last_error if record is not None else None,
             "checkpoint_path": view.checkpoint_path}
    for key, value in lines.items():
        if value:
            show(f"  {key}: {value}")
    if record is None or baton is None:
        return
    ending = baton.outcome if view.outcome is not None else None
    if ending is not None:  # complete, but tests still failing (debug-mode = "report")
        show(f"  outcome: {ending.status} — {ending.reason}")
        for key, value in (("debug_report", ending.debug_report),
                           ("test_output", ending.test_output)):
            if value:
                show(f"  {key}: {value}")
        show(f"  then re-run: {ending.rerun}")
    found = view.diagnosis()
    if found is not None:  # the seeds' five-part error
        for line in found.text().splitlines():
            show(f"  {line}" if line else "")
    if view.untrusted:
        show(f"  not trusted ({view.signature}): {view.untrusted}; resume needs "
             "--trust-checkpoint")
    cls = record.state_machine.classification
    show(f"  classification: {cls.workflow_type.value}, {cls.research_complexity} topic(s) "
         f"({cls.source or 'recorded'}): "
         f"{'; '.join(str(t) for t in view.topics())}")
    tiers = view.tiers()
    sup = tiers.research_supervisor
    if sup is not None and sup.supervisor_id:
        agg = sup.aggregated_metadata
        show(f"  research supervisor ({sup.mode}): {agg.reports_count}/"
             f"{sup.worker_count} workers completed, {agg.context_tokens} "
             "tokens of metadata passed up")
    impl = tiers.implementation_supervisor
    if impl is not None and impl.tracks:
        show("  implementation supervisor: " + ", ".join(
            f"{d} {t.status} ({len(t.phases)} phase(s))" for d, t in impl.tracks.items()))
    tested = tiers.testing_supervisor
    if tested is not None and tested.aggregated_metadata.model_fields_set:
        agg_t = tested.aggregated_metadata
        show(f"  testing supervisor: {agg_t.total_tests} test(s), "
             f"{agg_t.passed} passed, {agg_t.failed} failed")
    it = baton.iteration
    if it is not None:
        show(f"  iteration: {it.iteration}/{it.max_iterations}"
             f"  work_remaining={it.work_remaining or '0'}"
             f"  halt_reason={it.halt_reason or '-'}")
    for sid, step in baton.steps.items():
        extra = f" — {step.message}" if step.message and step.status != StepStatus.DONE \
            else ""
        cost = format_usage(step.usage)
        where = f"  on {step.worker}" if step.worker else ""
        show(f"  {sid:<24} {step.status:<9} attempts={step.attempts}"
             f"{where}{'  ' + cost if cost else ''}{_git_mark(step.git)}{extra}")
        for note in step.notes or []:
            show(f"  {'':<24} note: {note}")
    for tree in trees:
        show(f"  worktree of phase {tree['phase']}: {tree['path']} ({tree['branch']})")
    for done in baton.reconciled:
        show(f"  reconciled {str(done.get('at', ''))[:19]}: {done.get('what')}")
    if baton.usage is not None:
        for name, used in [*baton.usage.states.items(), ("workflow", baton.usage.total)]:
            if cost := format_usage(used):
                show(f"  cost {name:<14} {cost}")
    if baton.context is not None:
        for name, row in [*baton.context.states.items(), ("workflow", baton.context.total)]:
            if row.artifact_tokens:
                show(f"  context {name:<11} passed {row.passed_tokens:>6} of "
                     f"{row.artifact_tokens:>6} tokens  {reduction_text(row)}")


def _show_list(every: list[RunView], trees: dict[str, list[dict[str, str | None]]]) -> None:
    """`baton status`: a line per Baton workflow, then the bash system's runs."""
    from ..workflow.accounting import format_usage  # loaded for this command alone

    rows = [v for v in every if v.foreign is None]
    bash = [v for v in every if v.foreign is not None]
    if not rows:
        show("no Baton workflows in this workspace" if bash else
             "no workflows in this workspace")
    for v in sorted(rows, key=lambda v: v.updated_at or ""):
        cost = format_usage(v.usage)
        src = v.record.baton.adopted_from if v.record is not None else None
        source = f"  (adopted from {(src.model_extra or {}).get('id')})" \
            if src is not None else ""
        live = trees[v.workflow_id]
        shown = f"  [{len(live)} live worktree{'s' if len(live) > 1 else ''}]" if live else ""
        trust = f"  [not trusted: {v.signature}]" if v.untrusted else ""
        state = "needs-attention" if v.outcome else v.status
        show(f"{v.workflow_id:<44} {state!s:<12} {v.state!s:<10} "
             f"{(v.description or '')[:50]}{'  ' + cost if cost else ''}{source}{shown}"
             f"{trust}")
    if bash:
        print()
        show(f"from the bash system ({len(bash)} checkpoint file{'s' if len(bash) != 1 else ''}"
             " Baton did not write; `baton adopt ID` makes one resumable here):")
    width = max([44, *(len(v.workflow_id) for v in bash)])
    for v in sorted(bash, key=lambda v: v.updated_at or ""):
        show(f"{v.workflow_id:<{width}} {v.status!s:<12} "
             f"{v.state or '-'!s:<10} {(v.description or '')[:50]}  "
             f"[{'; '.join(_bash_marks(v))}]")


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _git_mark(record: PhaseGit | None) -> str:
    """Where a phase's work is in git, for a step line of `baton status ID`."""
    if record is None:
        return ""
    status = record.status
    if status == PhaseStatus.CONFLICT:
        return f"  merge conflict on {record.branch}: {', '.join(record.conflicts)}"
    if status == PhaseStatus.MERGED:
        return f"  merged {str(record.merged)[:10]}"
    if status == PhaseStatus.COMMITTED:
        return f"  committed on {record.branch}, not merged yet"
    return f"  {status} (no changes)" if status == PhaseStatus.EMPTY else f"  {status}"


def _bash_marks(view: RunView) -> list[str]:
    """What a bash run's row adds: progress, a missing plan, resume problems, adoption."""
    run = view.foreign
    assert run is not None
    if run.status == RunStatus.UNREADABLE:
        return [f"bash system; {run.problem}"]
    marks = ["bash system"]
    if run.current_phase is not None:
        marks.append(f"{'plan ' if run.plan_phases else ''}phase {run.current_phase}"
                     + (f"/{run.total_phases}" if run.total_phases else ""))
    if run.plan and not run.plan_exists:
        marks.append("plan missing")
    if run.problems:
        n = len(run.problems)
        marks.append(f"{n} safe-resume problem{'s' if n > 1 else ''}")
    if view.adopted_by:
        marks.append(f"adopted as {view.adopted_by}")
    return marks


def _foreign_status(root: Path, args: argparse.Namespace) -> int:
    """`baton status bash:ID` (or a checkpoint file): one bash-system run in detail."""
    # loaded for this command alone
    from ..runs.checkpoint import CheckpointError
    from ..runs.foreign import ForeignRuns, adopted_by, adoptions, is_foreign_id, resolve

    token = args.workflow_id
    if not is_foreign_id(token) and not any(os.path.lexists(p)
                                            for p in (Path(token), root / token)):
        show(f"baton: error: no workflow {token!r} in {root}", file=sys.stderr)
        return EXIT_ERROR
    try:
        run = ForeignRuns(root).read(resolve(root, token))
    except CheckpointError as exc:
        show(f"baton: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if run is None:
        show(f"baton: error: {token}: not a checkpoint of the bash system (or a symbolic "
             "link out of the workspace)", file=sys.stderr)
        return EXIT_ERROR
    by = adopted_by(run, adoptions(root))
    info = run.as_dict(by)
    if args.json:
        print(json.dumps(info, indent=2))
        return EXIT_OK
    show(f"{run.id}  {run.status}  state={run.state or '-'}  scope={run.scope or '-'}  "
         "(a checkpoint of the bash system, not written by Baton)")
    if not run.readable:
        show(f"  problem: {run.problem}")
        show(f"  checkpoint_path: {run.path}")
        return EXIT_OK
    if run.description:
        show(f"  description: {run.description}")
    show(f"  workflow_type: {run.workflow_type} (schema {run.schema_version or '1.0'})")
    if run.phase_text():
        show(f"  progress: {run.phase_text()}")
    if run.plan:
        show(f"  plan: {run.plan}" + ("" if run.plan_exists else
                                     f" (MISSING: rebind it with `baton adopt {run.id} "
                                     "--plan PATH`)"))
    for key in ("created_at", "updated_at"):
        if info.get(key):
            show(f"  {key}: {info[key]}")
    show(f"  checkpoint_path: {run.path}")
    for note in run.notes:
        show(f"  note: {note}")
    for problem in run.problems:
        show(f"  not safe to resume: {problem}")
    if by:
        show(f"  adopted as workflow {by}: `baton resume {by}`")
    else:
        show(f"  adopt it: `baton adopt {run.id}"
             + (" --plan PATH" if run.plan and not run.plan_exists else "")
             + (" --force" if run.problems else "") + "`, then `baton resume` the new id")
    return EXIT_OK


def cmd_adopt(args: argparse.Namespace) -> int:
    # loaded for this command alone
    from ..workspace.config import load_config
    from .adopt import AdoptError, AdoptRequest, adopt

    root = _root(args)
    req = AdoptRequest(args.checkpoint, plan=args.plan,
                       scope=Scope(args.scope) if args.scope else None, force=args.force,
                       workflow_id=args.workflow_id)
    try:
        done = adopt(root, load_config(root), req)
    except AdoptError as exc:
        show(f"baton: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps({"workflow_id": done.workflow_id, "record": str(done.record),
                          "adopted_from": str(done.source.path), "source_id": done.source.id,
                          "sha256": done.source.sha256, "state": done.state.value,
                          "scope": done.scope.value, "plan": done.plan,
                          "done_phases": done.done_phases, "notes": done.notes,
                          "forced": done.forced}, indent=2))
        return EXIT_OK
    show(f"adopted {done.source.id} as workflow {done.workflow_id}")
    show(f"  from {done.source.path} (sha256 {done.source.sha256}; left as it was)")
    show(f"  state {done.state.value}, scope {done.scope.value}"
         + (f"; {done.source.phase_text()}" if done.source.phase_text() else ""))
    if done.done_phases:
        show(f"  plan phases done by the bash system, skipped on resume: "
             f"{', '.join(done.done_phases)}")
    if done.plan:
        show(f"  plan: {done.plan}")
    for note in done.notes:
        show(f"  note: {note}")
    for problem in done.forced:
        show(f"  adopted despite: {problem}")
    show(f"  record: {done.record}")
    show(f"resume it with `baton resume {done.workflow_id}` (preview: `baton resume "
         f"{done.workflow_id} --dry-run`)")
    return EXIT_OK


def cmd_checkpoints(args: argparse.Namespace) -> int:
    # loaded for this command alone
    from ..runs.status import history
    from ..runs.store import valid_id

    root = _root(args)
    if not valid_id(args.workflow_id):
        show(f"baton: error: invalid workflow id {args.workflow_id!r}", file=sys.stderr)
        return EXIT_ERROR
    rows = history(root, args.workflow_id)
    if not rows:
        show(f"baton: error: no checkpoints for {args.workflow_id}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    for r in rows:
        if r["ok"]:
            show(f"{r['n']:>4}  {r['at']}  {r['state']:<10} {r['status']:<12} {r['event']}")
        else:
            show(f"{r['n']:>4}  UNUSABLE: {r['problem']}")
    show(f"resume from one with `baton resume {args.workflow_id} --at N`")
    return EXIT_OK


HANDLERS = {"run": cmd_run, "rerun": cmd_rerun, "resume": cmd_resume, "cancel": cmd_cancel,
            "status": cmd_status,
            "checkpoints": cmd_checkpoints, "adopt": cmd_adopt}


def cmd_clean_runs(args: argparse.Namespace) -> int:
    """`baton clean --runs`: remove finished workflows' histories past the retention
    settings; every resumable workflow stays (runs.retention)."""
    # loaded for this command alone
    from ..runs import confine
    from ..runs.retention import KEPT, REMOVED, SKIPPED, clean_runs
    from ..workspace.config import load_config

    root = _root(args)
    settings = load_config(root).workflow
    keep = settings.keep_runs if args.keep is None else args.keep
    days = settings.keep_runs_days if args.older_than is None else args.older_than
    if keep < 0 or not days >= 0:  # `not >=` refuses nan too
        show("baton: error: --keep and --older-than must be 0 or more", file=sys.stderr)
        return EXIT_ERROR
    try:
        verdicts = clean_runs(root, keep, days, dry_run=args.dry_run)
    except OSError as exc:
        show(f"baton: error: {confine.describe(exc)}", file=sys.stderr)
        return EXIT_FAILED
    for v in verdicts:
        if v.action == REMOVED and args.dry_run:
            show(f"would remove {v.workflow_id}: {v.reason.removeprefix('would be removed: ')}")
        elif v.action == REMOVED:
            show(f"removed {v.workflow_id}: {v.reason}")
        elif v.action == SKIPPED:
            show(f"skipped {v.workflow_id}: {v.reason}")
        elif v.action == KEPT:
            show(f"kept {v.workflow_id}: {v.reason}")
    removed = sum(v.action == REMOVED for v in verdicts)
    what = "finished workflow's history" if removed == 1 else "finished workflows' histories"
    show(f"{'would remove' if args.dry_run else 'removed'} {removed} {what} (keep-runs {keep}, "
         f"keep-runs-days {days:g}); {sum(v.action == KEPT for v in verdicts)} kept")
    return EXIT_OK
