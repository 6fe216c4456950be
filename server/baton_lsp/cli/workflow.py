"""`baton run | resume | cancel | status | checkpoints`: the workflow engine from a shell.

Each engine runs in the `baton` process itself (one workflow per process, a file lock per
workflow); `cancel` and `status` work from any other process through the checkpoint
directory, the engine's `run.json` and that lock.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from ..model.states import Scope

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
    run.add_argument("--runner", help="script, claude, codex, gemini or command (default: "
                     "[workflow] runner, else script)")
    run.add_argument("--id", dest="workflow_id", help="workflow id (default: generated)")
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
    res.add_argument("--runner", help="override the runner")
    res.add_argument("--dry-run", action="store_true", help="show what would be skipped and "
                     "what would run again, and change nothing")
    res.add_argument("--json", action="store_true", help="with --dry-run: as JSON")
    res.add_argument("--quiet", "-q", action="store_true")
    res.add_argument("--events", action="store_true", help="progress as JSON lines")
    settable(res)
    common(res)

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


def _root(args: argparse.Namespace) -> Path:
    from ..errors import PathError
    from ..workspace.discovery import find_root

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
    import tomllib

    from ..errors import ConfigError

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
    from ..workflow.engine import Engine
    from ..workspace.config import load_config

    config = load_config(root, parse_settings(getattr(args, "settings", []) or []))
    if getattr(args, "max_parallel", None):
        config.workflow.max_parallel = max(1, args.max_parallel)
    quiet = getattr(args, "quiet", False)
    events = getattr(args, "events", False)

    def say(line: str) -> None:
        if events:
            emit(json.dumps({"event": "log", "text": line}))
        elif not quiet:
            emit(line)

    def event(data: dict[str, Any]) -> None:
        emit(json.dumps(data, default=str))

    engine = Engine(root, config, runner=getattr(args, "runner", None), say=say,
                    command=f"baton {args.command}", events=event if events else None)
    engine.quiet = quiet
    return engine


def _drive(engine: Any, coro_factory: Any) -> int:
    from ..runs.store import WorkflowBusy
    from ..workflow.engine import EngineError, install_signal_handlers

    async def main() -> Any:
        install_signal_handlers(engine)
        return await coro_factory()

    try:
        outcome = asyncio.run(main())
    except WorkflowBusy as exc:
        print(f"baton: {exc}", file=sys.stderr)
        return EXIT_BUSY
    except EngineError as exc:
        print(f"baton: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    from ..runs.checkpoint import CheckpointError

    if isinstance(outcome, CheckpointError):  # pragma: no cover
        return EXIT_ERROR
    if engine.events is None and not getattr(engine, "quiet", False) and engine.data:
        from ..workflow.report import render

        print(render(engine.data, engine.root), flush=True)
    if engine.events is None:
        print(f"{outcome.workflow_id}: {outcome.status} ({outcome.state.value})"
              + (f" — checkpoint {outcome.checkpoint}" if outcome.checkpoint else ""))
    return outcome.exit_code


def cmd_run(args: argparse.Namespace) -> int:
    from ..model.states import Scope
    from ..workflow.engine import RunRequest

    root = _root(args)
    engine = _engine(args, root)
    req = RunRequest(description=args.description,
                     scope=Scope(args.scope) if args.scope else None,
                     complexity=args.complexity, topics=args.topic, plan_path=args.plan,
                     workflow_id=args.workflow_id)
    return _drive(engine, lambda: engine.start(req))


def _latest_unfinished(root: Path) -> str | None:
    from ..runs.store import CheckpointStore, list_workflows

    best: tuple[float, str] | None = None
    for wid in list_workflows(root):
        store = CheckpointStore(root, wid)
        try:
            entry = store.latest()
        except Exception:
            continue
        if entry.data and entry.data.get("status") != "complete":
            mtime = entry.path.stat().st_mtime
            if best is None or mtime > best[0]:
                best = (mtime, wid)
    return best[1] if best else None


def cmd_resume(args: argparse.Namespace) -> int:
    from ..runs.checkpoint import CheckpointError

    root = _root(args)
    wid = args.workflow_id or _latest_unfinished(root)
    if wid is None:
        print("baton: nothing to resume: no unfinished workflow in this workspace",
              file=sys.stderr)
        return EXIT_ERROR
    engine = _engine(args, root)
    if args.dry_run:
        from ..workflow.engine import EngineError

        try:
            plan = engine.preview_resume(wid, args.at)
        except (CheckpointError, EngineError) as exc:
            print(f"baton: error: {exc}", file=sys.stderr)
            return EXIT_ERROR
        if args.json:
            print(json.dumps(plan, indent=2))
            return EXIT_OK
        print(f"{wid}: {plan['status']} in {plan['failed_state']}; resume would restart in "
              f"{plan['resume_state']} from checkpoint {plan['checkpoint']}")
        for item in plan["skip"]:
            print(f"  skip    {item['step']}")
        for item in plan["rerun"]:
            print(f"  run     {item['step']} — {item['reason']}")
        if plan.get("iteration"):
            it = plan["iteration"]
            print(f"  implement continues at iteration {it['next']}/{it['max_iterations']} "
                  f"(remaining {it.get('work_remaining') or 'nothing'}"
                  + (f", halted: {it['halt_reason']}" if it.get("halt_reason") else "") + ")"
                  + ("; that is past max-iterations: add --set workflow.max-iterations=N"
                     if it["next"] > it["max_iterations"] else ""))
        for problem in plan["problems"]:
            print(f"  needs --force: {problem}")
        if plan["running"]:
            print("  the workflow is running now: resume would be refused")
        return EXIT_OK
    try:
        return _drive(engine, lambda: engine.resume(wid, at=args.at, force=args.force))
    except CheckpointError as exc:
        print(f"baton: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


def cmd_cancel(args: argparse.Namespace) -> int:
    from ..workflow.engine import cancel_workflow

    root = _root(args)
    try:
        message, code = cancel_workflow(root, args.workflow_id, args.grace)
    except Exception as exc:
        print(f"baton: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(message, file=sys.stderr if code else sys.stdout)
    return code


def _summary(root: Path, wid: str) -> dict[str, Any]:
    from ..runs.status import summary

    return summary(root, wid)


def cmd_status(args: argparse.Namespace) -> int:
    from ..runs.store import list_workflows
    from ..workflow.accounting import format_usage

    root = _root(args)
    if args.workflow_id:
        from ..runs.store import valid_id

        if not valid_id(args.workflow_id) or args.workflow_id not in list_workflows(root):
            print(f"baton: error: no workflow {args.workflow_id!r} in {root}", file=sys.stderr)
            return EXIT_ERROR
        info = _summary(root, args.workflow_id)
        if args.json:
            print(json.dumps(info, indent=2))
            return EXIT_OK
        print(f"{info['workflow_id']}  {info.get('status')}  state={info.get('state')}  "
              f"scope={info.get('scope')}{'  (running)' if info['running'] else ''}")
        for key in ("description", "topic_dir", "plan", "last_error", "checkpoint_path"):
            if info.get(key):
                print(f"  {key}: {info[key]}")
        cls = info.get("classification") or {}
        if cls:
            print(f"  classification: {cls.get('workflow_type')}, "
                  f"{cls.get('research_complexity')} topic(s) ({cls.get('source', 'recorded')}"
                  f"): {'; '.join(cls.get('topics') or [])}")
        sup = info.get("supervisor") or {}
        if sup:
            print(f"  research supervisor ({sup.get('mode')}): {sup.get('reports_count')}/"
                  f"{sup.get('worker_count')} workers completed, {sup.get('context_tokens')} "
                  "tokens of metadata passed up")
        it = info.get("iteration") or {}
        if it:
            print(f"  iteration: {it.get('iteration')}/{it.get('max_iterations')}"
                  f"  work_remaining={it.get('work_remaining') or '0'}"
                  f"  halt_reason={it.get('halt_reason') or '-'}")
        for sid, step in (info.get("steps") or {}).items():
            extra = f" — {step['message']}" if step.get("message") and \
                step.get("status") != "done" else ""
            cost = format_usage(step.get("usage"))
            print(f"  {sid:<24} {step.get('status', ''):<9} attempts={step.get('attempts', 0)}"
                  f"{'  ' + cost if cost else ''}{extra}")
        usage = info.get("usage") or {}
        for name, row in [*(usage.get("states") or {}).items(), ("workflow", usage.get("total"))]:
            if cost := format_usage(row):
                print(f"  cost {name:<14} {cost}")
        ctx = info.get("context") or {}
        for name, row in [*(ctx.get("states") or {}).items(), ("workflow", ctx.get("total"))]:
            if row and row.get("artifact_tokens"):
                print(f"  context {name:<11} passed {row['passed_tokens']:>6} of "
                      f"{row['artifact_tokens']:>6} tokens  reduction "
                      f"{row.get('reduction_pct')} %")
        return EXIT_OK
    rows = [_summary(root, wid) for wid in list_workflows(root)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print("no workflows in this workspace")
    for r in sorted(rows, key=lambda r: r.get("updated_at") or ""):
        cost = format_usage((r.get("usage") or {}).get("total"))
        print(f"{r['workflow_id']:<44} {r.get('status')!s:<12} {r.get('state')!s:<10} "
              f"{(r.get('description') or '')[:50]}{'  ' + cost if cost else ''}")
    return EXIT_OK


def cmd_checkpoints(args: argparse.Namespace) -> int:
    from ..runs.store import CheckpointStore, valid_id

    root = _root(args)
    if not valid_id(args.workflow_id):
        print(f"baton: error: invalid workflow id {args.workflow_id!r}", file=sys.stderr)
        return EXIT_ERROR
    entries = CheckpointStore(root, args.workflow_id).entries()
    if not entries:
        print(f"baton: error: no checkpoints for {args.workflow_id}", file=sys.stderr)
        return EXIT_ERROR
    rows = []
    for e in entries:
        d = e.data or {}
        rows.append({"n": e.sequence, "ok": e.ok, "problem": e.problem, "path": str(e.path),
                     "event": (d.get("baton") or {}).get("event"), "status": d.get("status"),
                     "state": (d.get("state_machine") or {}).get("current_state"),
                     "at": d.get("updated_at")})
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    for r in rows:
        if r["ok"]:
            print(f"{r['n']:>4}  {r['at']}  {r['state']:<10} {r['status']:<12} {r['event']}")
        else:
            print(f"{r['n']:>4}  UNUSABLE: {r['problem']}")
    print(f"resume from one with `baton resume {args.workflow_id} --at N`")
    return EXIT_OK


HANDLERS = {"run": cmd_run, "resume": cmd_resume, "cancel": cmd_cancel, "status": cmd_status,
            "checkpoints": cmd_checkpoints}
