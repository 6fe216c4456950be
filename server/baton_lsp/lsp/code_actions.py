"""Code actions: the fix carried by each finding, a suppression comment, fix-all, and the
creation of a missing agent or linked file.

Fixes are computed with the findings (ruff's model), so a code action never re-runs a rule:
it looks up the findings of the document's current version and turns their fixes into edits.
A file creation (`rules.fixes.creation_for`) is offered only to a client that applies
`CreateFile` operations, and never by fix-all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from ..model.base import Finding, Range, TextEdit
    from ..rules.fixes import FileCreation
from .convert import edits_to_workspace_edit, from_lsp_range, to_diagnostic
from .diagnostics import run_check
from .server import BatonServer, guard_async, uri_path
from .wire import path_to_uri

FIX_ALL = "source.fixAll.baton"
_MARKDOWN_SUFFIXES = (".md", ".markdown")
_RUN_CODES = ("BTN501", "BTN502", "BTN503", "BTN504", "BTN505", "BTN506")
"""What a workflow run reports (its checkpoints and errors log), not the file's text: they get
the run's actions (resume, retry, open), never a suppression comment, which would only hide
a failure the next run clears or repeats."""


_NAME_WIDTH = 60


def _name(view: object, wid: str) -> str:
    """How an action names a workflow: its description, quoted and cut to one short line (the
    Quick Fix menu is one line per action), as the editor's messages do; the id only when
    there is no description."""
    text = " ".join(str(getattr(view, "description", None) or "").split())
    if not text:
        return wid
    return f'"{text if len(text) <= _NAME_WIDTH else text[:_NAME_WIDTH - 1] + "…"}"'


def _overlaps(a: Range, b: Range) -> bool:
    return (a.start_line, a.start_char) <= (b.end_line, b.end_char) and \
        (b.start_line, b.start_char) <= (a.end_line, a.end_char)


def _suppress_edit(path: str, finding: Finding, lines: list[str]) -> TextEdit | None:
    """Insert `<!-- baton: ignore CODE -->` above the block holding the finding."""
    from ..model.base import Range, TextEdit  # the core loads on first use

    if not path.endswith(_MARKDOWN_SUFFIXES):
        return None
    line = finding.range.start_line
    while line > 0 and lines[line - 1].strip() and not lines[line].lstrip().startswith("#"):
        line -= 1
    indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())] if line < len(lines) \
        else ""
    return TextEdit(path=path, range=Range.of_line(line, 0, 0),
                    new_text=f"{indent}<!-- baton: ignore {finding.code} -->\n")


def _create_edit(made: FileCreation) -> types.WorkspaceEdit:
    """Create the file (failing if it appeared meanwhile: never overwrite), then fill it."""
    uri = path_to_uri(made.path)
    start = types.Position(line=0, character=0)
    return types.WorkspaceEdit(document_changes=[
        types.CreateFile(uri=uri, options=types.CreateFileOptions(overwrite=False,
                                                                  ignore_if_exists=False)),
        types.TextDocumentEdit(
            text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
            edits=[types.TextEdit(range=types.Range(start=start, end=start),
                                  new_text=made.text)])])


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll,
                           FIX_ALL], resolve_provider=False))
    @guard_async(list)
    async def code_action(ls: BatonServer,
                          params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        path = uri_path(uri)
        if path is None:
            return []
        lines = ls.session.lines_of(path)
        version = ls.session.open_version(uri)
        cached = ls.session.results.get(path)
        if cached is None or cached.version != version:
            findings = await run_check(ls, path)
        else:
            findings = cached.findings
        only = params.context.only
        actions: list[types.CodeAction] = []
        wants_quickfix = not only or any(k.startswith("quickfix") for k in only)
        wants_fix_all = not only or any(k in (FIX_ALL, types.CodeActionKind.SourceFixAll,
                                             types.CodeActionKind.Source) for k in only)
        if wants_quickfix:
            target = from_lsp_range(params.range, lines)
            for f in findings:
                if not _overlaps(f.range, target):
                    continue
                diag = to_diagnostic(f, lines, ls.session.lines_of)
                if f.fix is not None:
                    actions.append(types.CodeAction(
                        title=f.fix.title, kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag], is_preferred=f.fix.safe,
                        edit=edits_to_workspace_edit(f.fix.edits, ls.session.lines_of)))
                made = None
                if ls.create_files:
                    from ..rules.fixes import creation_for  # the core loads on first use

                    made = creation_for(f, lines, ls.session.index_for(path))
                if made is not None:
                    actions.append(types.CodeAction(
                        title=made.title, kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag], edit=_create_edit(made)))
                suppress = None if f.code in _RUN_CODES else _suppress_edit(path, f, lines)
                if suppress is not None:
                    actions.append(types.CodeAction(
                        title=f"Suppress {f.code} here", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=edits_to_workspace_edit([suppress], ls.session.lines_of)))
        if wants_quickfix and path.endswith(_MARKDOWN_SUFFIXES):
            actions.extend(_run_actions(ls, path, findings, from_lsp_range(params.range, lines),
                                        lines))
        if wants_fix_all:
            from ..rules.fixes import fix_all_edits  # the core loads on first use

            edits = fix_all_edits(findings)  # the one selection `baton check --fix` uses
            if edits:
                actions.append(types.CodeAction(
                    title="Baton: fix all auto-fixable problems", kind=FIX_ALL,
                    edit=edits_to_workspace_edit(edits, ls.session.lines_of)))
        return actions


def _run_actions(ls: BatonServer, path: str, findings: list[Finding], target: Range,
                 lines: list[str]) -> list[types.CodeAction]:
    """Resume / retry / earlier checkpoint / open checkpoint / open error-log entry, for the
    run findings under the cursor (BTN50x) or, on a plan, its resumable workflow."""
    from ..rules.run_state import CONFLICT_PREFIX  # loaded: these findings came from it
    from .workflows import CHECKPOINT_OPEN, OPEN, RESUME, RESUME_FROM, RESUME_PREVIEW

    here = [f for f in findings if f.code in _RUN_CODES and _overlaps(f.range, target)]
    views: dict[str, object] = {}
    runs = ls.session.index_for(path).runs
    from ..runs.store import valid_id  # the core loads on first use

    for f in here:
        wid = f.tags[0] if f.tags else ""  # run findings carry [workflow id, step:…]
        if valid_id(wid) and wid not in views:
            views[wid] = runs.view(wid)
    plan_view = runs.for_plan(path) if path not in views else None
    if plan_view is not None and plan_view.resumable and plan_view.workflow_id not in views:
        views[plan_view.workflow_id] = plan_view
    out: list[types.CodeAction] = []
    for wid, view in views.items():
        if not getattr(view, "resumable", False):
            continue
        args = [{"id": wid, "workspace": str(view.root)}]  # type: ignore[attr-defined]
        name = _name(view, wid)
        diags = [to_diagnostic(f, lines, ls.session.lines_of) for f in here if wid in f.tags]
        out.append(types.CodeAction(
            title=f"Resume workflow {name} (shows what is skipped and re-run first)",
            kind=types.CodeActionKind.QuickFix, diagnostics=diags or None,
            is_preferred=not any(f.code == "BTN506" for f in here),  # resolve, then resume
            command=types.Command(title="Resume workflow", command=RESUME_PREVIEW,
                                  arguments=args)))
        for f in here:
            step = next((t[5:] for t in f.tags if t.startswith("step:")), None)
            phase = step.removeprefix("implement.phase-") if step else None
            if f.code in ("BTN501", "BTN502") and wid in f.tags and step:
                what = f"Phase {phase}" if phase != step else f"step {step}"
                out.append(types.CodeAction(
                    title=f"Retry failed {what} and continue {name}",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[to_diagnostic(f, lines, ls.session.lines_of)],
                    command=types.Command(title="Retry failed phase", command=RESUME,
                                          arguments=args)))
        out.append(types.CodeAction(
            title=f"Resume workflow {name} from an earlier checkpoint…",
            kind=types.CodeActionKind.QuickFix,
            command=types.Command(title="Resume from an earlier checkpoint", command=RESUME_FROM,
                                  arguments=args)))
        out.append(types.CodeAction(
            title=f"Open checkpoint of {name}", kind=types.CodeActionKind.QuickFix,
            command=types.Command(title="Open checkpoint", command=CHECKPOINT_OPEN,
                                  arguments=args)))
    for f in here:
        if f.code == "BTN506":  # open each conflicting file at its first conflict marker
            out += [types.CodeAction(
                title=f"Open merge conflict in {rel.message.removeprefix(CONFLICT_PREFIX)}",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[to_diagnostic(f, lines, ls.session.lines_of)],
                is_preferred=n == 0,
                command=types.Command(title="Open merge conflict", command=OPEN,
                                      arguments=[{"path": rel.path,
                                                  "line": rel.range.start_line}]))
                for n, rel in enumerate(r for r in f.related
                                        if r.message.startswith(CONFLICT_PREFIX))]
        for rel in f.related:
            if rel.path.endswith("errors.jsonl"):
                out.append(types.CodeAction(
                    title=f"Open error log entry (line {rel.range.start_line + 1})",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[to_diagnostic(f, lines, ls.session.lines_of)],
                    command=types.Command(title="Open error log entry", command=OPEN,
                                          arguments=[{"path": rel.path,
                                                      "line": rel.range.start_line}])))
                break
    return out
