"""`baton` entry point: check, rule, graph, schema, migrate, lsp, and the workflow commands
(run, resume, cancel, status, checkpoints, adopt) from `cli/workflow.py`."""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import __version__, lazylog
from ..errors import ConfigError, PathError
from ..terminal import terminal_safe

TYPE_CHECKING = False
"""`typing.TYPE_CHECKING` without importing `typing` (a replayed check never needs it);
mypy takes any `TYPE_CHECKING` as true."""
if TYPE_CHECKING:  # each command imports what it needs: `baton lsp` must start fast
    from typing import NoReturn

    from ..model.graph import PlanGraph
    from ..model.plan import Plan
    from ..rules.checker import CheckResult
    from ..runs.checkpoint import LoadedCheckpoint

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def configure_logging(verbose: bool) -> None:
    """`cli/logs.py`'s set-up, imported only when called: a replayed check logs nothing."""
    from .logs import configure_logging as configure  # a replayed check logs nothing

    configure(verbose)


def _codes(value: str) -> list[str]:
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes, not {value!r}"
                                         ) from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1 process, not {n}")
    return n


def add_lsp_arguments(lsp: argparse.ArgumentParser) -> None:
    """`baton lsp`'s options (also parsed alone: see `main`)."""
    lsp.add_argument("--stdio", action="store_true", help="use stdio (the default)")
    lsp.add_argument("--tcp", metavar="HOST:PORT", help="listen on a TCP port instead")
    lsp.add_argument("--log-level", default="INFO",
                     choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    lsp.add_argument("--log-file", type=Path, nargs="?", const="default",
                     help="also log to a file (default: the platform's user log directory)")
    lsp.add_argument("--no-cache", action="store_true",
                     help="neither read nor write the result cache `baton check` shares")
    lsp.add_argument("--cache-dir", type=Path, default=None,
                     help="where the result cache lives (as for check)")


def add_check_arguments(check: argparse.ArgumentParser) -> None:
    """`baton check`'s options (also parsed alone: see `main`)."""
    check.add_argument("paths", nargs="*", type=Path, help="files or directories (default: .)")
    check.add_argument("--format", "--output-format", dest="format",
                       choices=["text", "json", "sarif", "github"], default="text",
                       help="how findings are printed (`--output-format` as in ruff)")
    check.add_argument("--select", type=_codes, help="comma list of codes or prefixes to enable")
    check.add_argument("--ignore", type=_codes, help="comma list of codes or prefixes to skip")
    check.add_argument("--shellcheck", choices=["auto", "all", "off"],
                       help="run ShellCheck (BTN330) on commands whose blocks call a "
                       "project library (auto, the default), on every command, or never")
    check.add_argument("--no-shellcheck", action="store_const", dest="shellcheck", const="off",
                       help="same as --shellcheck off")
    check.add_argument("-v", "--verbose", dest="explain_skips", action="store_true",
                       help="say on stderr which blocks were not checked and why (e.g. a "
                       "bash block that is a template, not a script)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even with errors")
    check.add_argument("--fix", action="store_true",
                       help="apply the fixes the editor's fix-all applies, again on the "
                       "fixed text until none is left, then report what remains")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="with --fix or --diff: apply the fixes marked unsafe too (they "
                       "may change what a file means)")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes --fix would make as a unified diff and write "
                       "nothing (exit 1 when there is something to fix)")
    check.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N",
                       help="processes that check files (default: one per idle core from 32 "
                       "files, forked copies of this one; where fork cannot be used, "
                       "spawned workers from 400 files; 1: check in this process)")
    check.add_argument("--no-cache", action="store_true",
                       help="check every file again and leave the result cache alone")
    check.add_argument("--cache-dir", type=Path, default=None,
                       help="where the result cache lives (default: $BATON_CACHE_DIR, else "
                       "the user cache directory, e.g. ~/.cache/baton)")


def _columns() -> int:
    """`shutil.get_terminal_size().columns`, without importing `shutil` (it brings `bz2`,
    `lzma` and `zlib` into a check that never copies a file): `COLUMNS` if a positive
    number, else the terminal's width, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class LightHelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, sized by `_columns`: argparse builds one for every option it
    adds, and its own looks the width up through `shutil`."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        super().__init__(prog, indent_increment, max_help_position,
                         _columns() - 2 if width is None else width)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="baton",
        description="Validate and run .claude/ agent workflows (plans, agents, commands).")
    parser.add_argument("--version", action="version", version=f"baton {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    add_check_arguments(sub.add_parser("check", help="check plans, agents, commands and "
                                       "data files"))

    clean = sub.add_parser("clean", help="remove the result cache (every workspace's), or "
                           "with --runs finished workflows' checkpoint histories")
    clean.add_argument("--cache-dir", type=Path, default=None,
                       help="the cache directory to empty (default: as for check)")
    clean.add_argument("--runs", action="store_true", help="remove the histories of finished "
                       "workflows of this workspace past [workflow] keep-runs / keep-runs-days "
                       "(never a failed, cancelled, interrupted or running one)")
    clean.add_argument("--keep", type=int, default=None, metavar="N",
                       help="with --runs: finished workflows to keep (default: keep-runs, 20)")
    clean.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                       help="with --runs: remove finished workflows older than this "
                       "(default: keep-runs-days, 30)")
    clean.add_argument("--dry-run", action="store_true", help="with --runs: say what would "
                       "be removed, remove nothing")
    clean.add_argument("--workspace", "-w", type=Path, default=None,
                       help="with --runs: workspace root (default: the one containing the "
                       "current directory)")

    rule = sub.add_parser("rule", help="show the documentation of one rule or all rules")
    rule.add_argument("code", nargs="?", help="rule code (BTN101) or name")
    rule.add_argument("--list", action="store_true", help="one line per rule")
    rule.add_argument("--format", choices=["text", "json"], default="text")

    graph = sub.add_parser("graph", help="dependency waves and critical path of a plan")
    graph.add_argument("plan", type=Path)
    graph.add_argument("--format", choices=["text", "mermaid", "json"], default="text")

    add_lsp_arguments(sub.add_parser("lsp", help="start the language server (stdio by "
                                     "default)"))

    schema = sub.add_parser("schema", help="JSON Schemas generated from the models")
    schema.add_argument("name", nargs="?", help="print one schema (see `baton schema`)")
    schema.add_argument("--write", action="store_true", help="write all schemas to --out")
    schema.add_argument("--check", action="store_true",
                        help="exit 1 when the files in --out are stale")
    schema.add_argument("--out", type=Path, default=Path("schemas"))

    from .workflow import add_parsers  # never for `check` and `lsp` (see `main`)

    add_parsers(sub)
    from .worker import add_worker_parser  # never for `check` and `lsp` (see `main`)

    add_worker_parser(sub)
    migrate = sub.add_parser("migrate", help="migrate a checkpoint file to schema 2.1 in place "
                             "(the original is kept as FILE.backup)")
    migrate.add_argument("file", type=Path, help="checkpoint JSON file")
    migrate.add_argument("--dry-run", action="store_true",
                         help="print the migrated JSON to stdout and write nothing")
    return parser


def cmd_check(args: argparse.Namespace) -> int:
    from ..rules import replay  # light: no models, no rules

    fmt = args.format
    color = fmt == "text" and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    cache_dir: Path | None = None
    request = replayed = None
    fixing = args.fix or args.diff
    if not args.no_cache and not args.explain_skips:  # the reasons are told while checking
        from ..rules.cache import default_dir  # loaded for this command alone

        cache_dir = args.cache_dir or default_dir()
    if cache_dir is not None and not fixing:  # a stored output says nothing of fixes
        request = replay.Request(
            paths=tuple(os.path.abspath(p) for p in args.paths or [Path(".")]),
            options=(json.dumps([args.select, args.ignore, args.shellcheck]), fmt,
                     "color" if color else "plain"),
            cwd=os.getcwd())
        # Before anything heavy is imported: an unchanged tree needs only `stat`s.
        replayed = replay.replay(cache_dir, request)
        if isinstance(replayed, replay.Replayed):
            sys.stdout.write(replayed.output)
            return EXIT_FINDINGS if replayed.errors and not args.exit_zero else EXIT_OK

    # After the replay: a stored check was recorded only once its options had passed this.
    bad = _unknown_flag_selectors(args)
    if bad:
        print(terminal_safe(f"baton: error: {bad}"), file=sys.stderr)
        return EXIT_ERROR
    # A one-shot check leaves the cyclic collector off from its imports to its output: the
    # checker pauses it for the bulk of the work anyway, and turning it back on made the next
    # allocation walk every object the check had made (acyclic, freed by reference counts:
    # that collection found nothing), a twentieth of a corpus's check. Frozen, they are never
    # walked again, not even by the collection at the interpreter's exit.
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check(args, fmt, color, cache_dir, request, replayed, fixing)
    finally:
        if collecting:
            gc.freeze()
            gc.enable()


def _check(args: argparse.Namespace, fmt: str, color: bool, cache_dir: Path | None,
           request: object, replayed: object, fixing: bool) -> int:
    """`cmd_check` once nothing could be replayed: check, fix, print, record."""
    # Baton's own checkpoint models need no pydantic plugin, and looking for one scans every
    # installed distribution's entry points on the first model built (pydantic's documented
    # switch; a check starts no process that could miss a plugin: ShellCheck only).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # Not before: a replayed check never imports `logging`; and a check imports it only
    # for its first record (most log nothing), unless `-v` or `--explain-skips` ask for
    # records below WARNING, which are dropped while `logging` is not loaded.
    if args.verbose or args.explain_skips:
        configure_logging(args.verbose)
    else:
        lazylog.configure_on_first_record(functools.partial(configure_logging, False))
    # once it has to check: a replay needs none of it
    from ..model.base import Severity
    from ..rules import replay
    from ..rules.base import SKIPPED_LOG
    from ..rules.checker import check_paths, recheck
    from . import output

    overrides: dict[str, object] = {}
    if args.select:
        overrides["select"] = args.select
    if args.ignore:
        overrides["ignore"] = args.ignore
    if args.shellcheck:
        overrides["shellcheck"] = args.shellcheck
    if args.explain_skips:  # worker processes are forked, so they inherit this level
        import logging  # configured above

        logging.getLogger(SKIPPED_LOG).setLevel(logging.DEBUG)
    cache = None
    if cache_dir is not None:
        from ..rules.cache import ResultCache  # loaded for this command alone

        cache = ResultCache(cache_dir)
    result = None
    if isinstance(replayed, replay.Partial):
        result = recheck(replayed, overrides, jobs=args.jobs, cache=cache)
    if result is None:
        result = check_paths(args.paths or [Path(".")], overrides, jobs=args.jobs, cache=cache)
    if not result.workspaces:  # a typo'd path or the wrong directory: not "All checks passed"
        print("baton: error: no workspace found at or below the given paths (a .claude/ tree, "
              "a specs/ with plans or a registry, an .opencode/ tree, or a Claude Code "
              "plugin); name a workspace or one of its files", file=sys.stderr)
        return EXIT_ERROR
    fixed_note = ""
    if fixing:
        done = _apply_fixes(args, result)
        if args.diff:  # as ruff's: 1 when there is something to fix
            return EXIT_FINDINGS if done is not None else EXIT_OK
        if done is not None:
            fixed_note = done
            # What is left, checked afresh from disk (the cache sees the files changed).
            result = check_paths(args.paths or [Path(".")], overrides, jobs=args.jobs,
                                 cache=cache)
    if fmt == "text":
        text = output.render_text(result.findings, result.files, color)
    elif fmt == "json":
        text = output.render_json(result.findings)
    elif fmt == "sarif":
        text = output.render_sarif(result.findings)
    else:
        text = output.render_github(result.findings)
    if fixed_note and fmt == "text":
        text = fixed_note + "\n" + text
    elif fixed_note:
        print(fixed_note, file=sys.stderr)  # stdout stays one JSON / SARIF document
    sys.stdout.write(text)
    errors = any(f.severity is Severity.ERROR for f in result.findings)
    if cache is not None and isinstance(request, replay.Request) and result.reads is not None:
        replay.record(cache.directory, request, result.reads, text, errors, cache.strict)
    if args.exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if errors else EXIT_OK


def _apply_fixes(args: argparse.Namespace, result: CheckResult) -> str | None:
    """`--fix` / `--diff`: fix-all over the checked files until nothing is left to fix (see
    `rules.fixes`). `--diff` prints the diff and returns "" when there was something to fix;
    `--fix` writes the files and returns the sentence saying how many problems it fixed.
    None: nothing to fix."""
    # loaded for this command alone
    from ..rules.fixes import fix_paths, unified_diff, write_fixes
    from .output import display_path

    fixes = fix_paths(result.targets, result.findings, unsafe=args.unsafe_fixes)
    for line in fixes.skipped:
        print(terminal_safe(f"baton: warning: {line}"), file=sys.stderr)
    if not fixes.converged:
        print(f"baton: warning: fixes still applied after {fixes.passes} passes; the last "
              "pass's text is kept (please report the files)", file=sys.stderr)
    files = len(fixes.files)
    counted = (f"{fixes.fixed} problem{'s' if fixes.fixed != 1 else ''} in {files} "
               f"file{'s' if files != 1 else ''}")
    if args.diff:
        for path, fix in sorted(fixes.files.items()):
            sys.stdout.write(unified_diff(path, display_path(path), fix))
        print(f"Would fix {counted}." if files else "No fixes available.", file=sys.stderr)
        return "" if files else None
    problems = write_fixes(fixes)
    for line in problems:
        print(terminal_safe(f"baton: warning: {line}"), file=sys.stderr)
    return f"Fixed {counted}." if files else None


def _unknown_flag_selectors(args: argparse.Namespace) -> str | None:
    """The error for a `--select` / `--ignore` entry that names no rule (as ruff's "Unknown
    rule selector"), else None."""
    if not args.select and not args.ignore:
        return None
    from ..rules.base import unknown_selectors  # loaded for this command alone

    for flag, values in (("--select", args.select), ("--ignore", args.ignore)):
        bad = unknown_selectors(values or [])
        if bad:
            named = ", ".join(f"`{b}`" for b in bad)
            return (f"unknown rule selector {named} in {flag}: no rule code starts with it "
                    "(see `baton rule --list`)")
    return None


def cmd_clean(args: argparse.Namespace) -> int:
    from ..rules.cache import clean, default_dir  # loaded for this command alone

    if args.runs:
        from .workflow import cmd_clean_runs  # loaded for this command alone

        return cmd_clean_runs(args)
    if args.keep is not None or args.older_than is not None or args.dry_run:
        print("baton: --keep, --older-than and --dry-run go with --runs", file=sys.stderr)
        return EXIT_ERROR

    directory = args.cache_dir or default_dir()
    removed = clean(directory)
    if removed:
        print(f"removed the result cache in {directory} ({len(removed)} entries)")
    else:
        print(f"no result cache in {directory}")
    return EXIT_OK


def _rule_text(code: str) -> str:
    # loaded for this command alone
    from ..model.base import Kind
    from ..rules.base import get_rule

    r = get_rule(code)
    assert r is not None
    kinds = ", ".join(sorted(k.value for k in r.kinds)) if len(r.kinds) < len(Kind) else "any"
    head = f"{r.code} {r.name}"
    meta = f"Default severity: {r.severity.value} · Applies to: {kinds}"
    if r.fixable:
        meta += " · Quick fix available"
    if r.cross_file:
        meta += " · Cross-file"
    from ..model.base import CONVENTION_DOCS  # loaded for this command alone

    meta += f"\nConvention: {r.convention.value} ({CONVENTION_DOCS[r.convention]})"
    return f"{head}\n{'=' * len(head)}\n{meta}\n\n{r.doc}\n"


def cmd_rule(args: argparse.Namespace) -> int:
    from ..rules.base import all_rules, get_rule  # loaded for this command alone

    if args.code:
        r = get_rule(args.code)
        if r is None:
            print(f"baton: unknown rule '{args.code}'; run `baton rule --list`", file=sys.stderr)
            return EXIT_ERROR
        rules = [r]
    else:
        rules = all_rules()
    if args.format == "json":
        print(json.dumps([{"code": r.code, "name": r.name, "severity": r.severity.value,
                           "kinds": sorted(k.value for k in r.kinds), "fixable": r.fixable,
                           "convention": r.convention.value,
                           "summary": r.summary, "doc": r.doc} for r in rules], indent=2))
    elif args.list or not args.code:
        if args.list:
            for r in rules:
                print(f"{r.code}  {r.name:<34} {r.severity.value:<8} {r.summary}")
        else:
            print("\n".join(_rule_text(r.code) for r in rules), end="")
    else:
        print(_rule_text(rules[0].code), end="")
    return EXIT_OK


def cmd_graph(args: argparse.Namespace) -> int:
    # loaded for this command alone
    from ..model.base import Kind
    from ..model.graph import build_graph, mermaid
    from ..model.plan import Plan, PlanRole
    from ..parse import parse_bytes
    from ..parse.text import DEFAULT_MAX_BYTES
    from ..runs.confine import NotRegular, OutsideLink, read_head
    from ..workspace.discovery import find_root
    from ..workspace.index import unread

    plan = Path(os.path.abspath(args.plan))
    root = find_root(plan) or plan.parent
    try:  # as `check` reads it: never through a link out of the workspace, nor a FIFO
        data, _ = read_head(root, plan, DEFAULT_MAX_BYTES + 1)
    except OutsideLink as exc:
        print(terminal_safe(f"baton: {unread(root, str(plan), exc)}"), file=sys.stderr)
        return EXIT_ERROR
    except NotRegular:
        print(terminal_safe(f"baton: {args.plan}: not a regular file"), file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:
        print(terminal_safe(f"baton: {args.plan}: {exc.strerror or exc}"), file=sys.stderr)
        return EXIT_ERROR
    doc = parse_bytes(Kind.PLAN, data, str(args.plan))
    if not isinstance(doc, Plan):
        print(terminal_safe(f"baton: {args.plan}: {getattr(doc, 'reason', 'not a plan')}"),
              file=sys.stderr)
        return EXIT_ERROR
    graph = build_graph(doc)
    missing = graph.missing if doc.role is PlanRole.PLAN else {}  # a phase file: the parent's
    if args.format == "mermaid":
        sys.stdout.write(mermaid(graph))
        for line in _missing_lines(graph, missing):  # stdout stays a diagram
            print(terminal_safe(f"baton: warning: {line}"), file=sys.stderr)
        return EXIT_OK  # the machine formats exit 0, with a cycle too
    if args.format == "json":
        print(json.dumps({"phases": graph.order, "titles": graph.titles, "deps": graph.deps,
                          "missing": missing,
                          "implicit": graph.implicit, "waves": graph.waves,
                          "cycles": graph.cycles, "blocked": graph.blocked,
                          "critical_path": graph.critical_path}, indent=2))
        return EXIT_OK
    sys.stdout.write(graph_text(doc, graph, missing))
    # A missing phase is left out and the rest still runs (BTN101 is check's to fail on);
    # a cycle leaves phases that never run.
    return EXIT_FINDINGS if graph.cycles else EXIT_OK


def _missing_lines(graph: PlanGraph, missing: dict[str, list[str]]) -> list[str]:
    """One line per phase that names phases the plan lacks (BTN101 reports each on its
    dependency line): the waves leave those dependencies out, so say so."""
    lines = []
    for pid, ids in missing.items():
        many = len(ids) > 1
        lines.append(f"Phase {pid} ({graph.titles.get(pid, '')}) depends on phase"
                     f"{'s' if many else ''} {', '.join(ids)}, which do{'' if many else 'es'} "
                     f"not exist (BTN101): the waves ignore {'them' if many else 'it'}")
    return lines


def graph_text(plan: Plan, graph: PlanGraph,
               missing: dict[str, list[str]] | None = None) -> str:
    from ..model.graph import mermaid  # loaded for this command alone

    lines = [f"Plan: {plan.title or Path(plan.path).name}"]
    if not graph.order:
        lines.append("No phases found.")
        return terminal_safe("\n".join(lines), multiline=True) + "\n"
    cp = graph.critical_path
    lines.append(f"{len(graph.order)} phases · {len(graph.waves)} waves · critical path "
                 f"{len(cp)} phases ({' → '.join(cp)})")
    if graph.implicit:
        lines.append("No phase declares dependencies: phases run in document order.")
    for i, wave in enumerate(graph.waves, 1):
        label = "parallel" if len(wave) > 1 else "sequential"
        names = ", ".join(f"Phase {p} ({graph.titles.get(p, '')})" for p in wave)
        lines.append(f"Wave {i} [{label}]: {names}")
    for cycle in graph.cycles:
        lines.append(f"Cycle: {' → '.join(cycle)}")
    if graph.blocked:
        lines.append(f"Blocked by a cycle (never runs): {', '.join(graph.blocked)}")
    lines += _missing_lines(graph, missing or {})
    lines += ["", "Mermaid:", mermaid(graph).rstrip("\n")]
    return terminal_safe("\n".join(lines), multiline=True) + "\n"


def cmd_schema(args: argparse.Namespace) -> int:
    from .schema import SCHEMAS, generate, write_schemas  # loaded for this command alone

    if args.name and args.name not in SCHEMAS:
        print(f"baton: unknown schema '{args.name}'; one of: {', '.join(sorted(SCHEMAS))}",
              file=sys.stderr)
        return EXIT_ERROR
    if args.name and not (args.write or args.check):
        print(json.dumps(generate(args.name), indent=2))
        return EXIT_OK
    if args.check:
        stale = write_schemas(args.out, dry_run=True)
        for name in stale:
            print(f"stale: {args.out / name}")
        return EXIT_FINDINGS if stale else EXIT_OK
    if args.write:
        changed = write_schemas(args.out)
        print(f"wrote {len(SCHEMAS)} schemas to {args.out} ({len(changed)} changed)")
        return EXIT_OK
    for name in sorted(SCHEMAS):
        print(name)
    return EXIT_OK


def _migration_summary(loaded: LoadedCheckpoint) -> list[str]:
    from ..runs.checkpoint import CURRENT_VERSION  # loaded for this command alone

    if loaded.kind == "iteration":
        source = f"{loaded.source_version} (iteration checkpoint)"
    elif loaded.kind == "supervisor":
        source = "none (supervisor checkpoint)"
    else:
        source = loaded.source_version or "1.0"
    steps = ", ".join(loaded.steps) if loaded.steps else (
        f"none (already at {CURRENT_VERSION})" if loaded.kind == "checkpoint"
        else f"none ({loaded.kind} checkpoints have no migration chain)")
    return [f"source version: {source}", f"steps applied: {steps}",
            *(f"note: {note}" for note in loaded.notes)]


def cmd_migrate(args: argparse.Namespace) -> int:
    # loaded for this command alone
    from ..runs.checkpoint import (
        CheckpointError,
        dump_checkpoint,
        load_checkpoint,
        migrate_file,
    )

    try:
        if args.dry_run:
            loaded = load_checkpoint(args.file)
            text = dump_checkpoint(loaded.data)
        else:
            result = migrate_file(args.file)
    except CheckpointError as exc:
        print(terminal_safe(f"baton: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    if args.dry_run:
        for line in _migration_summary(loaded):
            print(terminal_safe(line), file=sys.stderr)
        print(terminal_safe(f"target: {args.file} (dry run: nothing written)"), file=sys.stderr)
        sys.stdout.write(text)
        return EXIT_OK
    for line in _migration_summary(result.loaded):
        print(terminal_safe(line))
    if result.written:
        print(terminal_safe(f"target: {result.target} (original kept in {result.backup})"))
    else:
        print(terminal_safe(f"target: {result.target} (unchanged)"))
    return EXIT_OK


def cmd_lsp(args: argparse.Namespace) -> int:
    from ..lsp.app import default_log_file, start  # loaded for this command alone

    log_file = args.log_file
    if log_file is not None and str(log_file) == "default":
        log_file = default_log_file()
    if args.tcp and ":" not in args.tcp:
        print("baton: error: --tcp expects HOST:PORT", file=sys.stderr)
        return EXIT_ERROR
    return start(tcp=args.tcp, log_level=args.log_level, log_file=log_file,
                 cache=not args.no_cache, cache_dir=args.cache_dir)


def tune_gc() -> None:
    """Fewer, cheaper collections, from the process's first import on: importing lsprotocol,
    pygls and pydantic allocates millions of objects and the default gen-0 threshold (700)
    ran the collector thousands of times on the way to `initialize` and the first check;
    a check allocates ~10^5 short-lived acyclic objects and it ran dozens of times per
    keystroke, walking every cached document on each full pass. The server freezes the
    objects alive once it has started (`lsp.lifecycle.first_checks`)."""
    gc.set_threshold(50_000, 20, 20)


def main(argv: Sequence[str] | None = None) -> int:
    tune_gc()
    for stream in (sys.stdout, sys.stderr):  # file names and descriptions may not be UTF-8
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    argv = list(sys.argv[1:] if argv is None else argv)
    alone = {"lsp": add_lsp_arguments, "check": add_check_arguments}
    if argv[:1] and argv[0] in alone and not {"-h", "--help"} & set(argv):
        # The language server's start-up and a check: only the command's own options, not
        # every command's parser (which imports the workflow commands' module): an editor
        # waits for `initialize`, and a check of a small tree is mostly start-up.
        parser = argparse.ArgumentParser(prog=f"baton {argv[0]}",
                                         formatter_class=LightHelpFormatter)
        alone[argv[0]](parser)
        args = parser.parse_args(argv[1:])
        args.command, args.verbose = argv[0], False
    else:
        parser = build_parser()
        args = parser.parse_args(argv)
    if args.command != "check" or args.verbose:  # else `cmd_check`, once it has to check
        configure_logging(args.verbose)
    handlers = {"check": cmd_check, "clean": cmd_clean, "rule": cmd_rule, "graph": cmd_graph,
                "schema": cmd_schema,
                "lsp": cmd_lsp, "migrate": cmd_migrate}
    if args.command == "worker":
        from .worker import cmd_worker  # loaded for this command alone

        handlers["worker"] = cmd_worker
    if args.command in ("run", "rerun", "resume", "cancel", "status", "checkpoints", "adopt"):
        from .workflow import HANDLERS  # loaded for this command alone

        handlers.update(HANDLERS)
    if args.command is None:
        parser.print_help()
        return EXIT_ERROR
    try:
        return handlers[args.command](args)
    except (ConfigError, PathError) as exc:
        print(terminal_safe(f"baton: error: {exc}"), file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # last line of defence: a message, never a traceback
        import logging  # an internal error only

        configure_logging(args.verbose)
        logging.getLogger(__name__).debug("internal error", exc_info=True)
        print(terminal_safe(f"baton: internal error: {type(exc).__name__}: {exc} (run with -v "
                            "and report it)"), file=sys.stderr)
        return EXIT_ERROR


FAST_EXIT_COMMANDS = frozenset({"check"})
"""The commands whose process `run` ends without the interpreter's teardown: a check's
only exit handler is ShellCheck's `kill_running` (called here), its threads are daemons and
its `--jobs` pool is shut down before `main` returns. The workflow commands keep the usual
exit: their threads, temporary directories and log handlers rely on it."""


def run(argv: Sequence[str] | None = None) -> NoReturn:
    """The `baton` console script and `python -m baton_lsp`: `main`, then, for a check, the
    output flushed and `os._exit`: tearing the interpreter down (freeing every module,
    pattern and record one by one) is CPU a finished check spends for nothing
    (BENCHMARKS.md). Only here, never in `main`: tests and other callers run `main` in-process."""
    args = list(sys.argv[1:] if argv is None else argv)
    code = main(args)
    if args[:1] and args[0] in FAST_EXIT_COMMANDS:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            sys.exit(code)  # let the usual exit report a stream it could not write
        shellcheck = sys.modules.get("baton_lsp.rules.shellcheck_run")
        if shellcheck is not None:
            shellcheck.kill_running()  # what `atexit` would have run
        if "logging" in sys.modules:
            import logging  # already loaded: binding the name costs nothing

            logging.shutdown()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
