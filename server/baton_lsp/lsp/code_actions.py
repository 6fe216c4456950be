"""Code actions: the fix carried by each finding, a suppression comment, and fix-all.

Fixes are computed with the findings (ruff's model), so a code action never re-runs a rule:
it looks up the findings of the document's current version and turns their fixes into edits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from ..model.base import Finding, Range, TextEdit
from .convert import edits_to_workspace_edit, from_lsp_range, to_diagnostic
from .server import BatonServer, guard, uri_path

FIX_ALL = "source.fixAll.baton"
_MARKDOWN_SUFFIXES = (".md", ".markdown")


def _overlaps(a: Range, b: Range) -> bool:
    return (a.start_line, a.start_char) <= (b.end_line, b.end_char) and \
        (b.start_line, b.start_char) <= (a.end_line, a.end_char)


def _suppress_edit(path: str, finding: Finding, lines: list[str]) -> TextEdit | None:
    """Insert `<!-- baton: ignore CODE -->` above the block holding the finding."""
    from ..model.base import Range, TextEdit

    if not path.endswith(_MARKDOWN_SUFFIXES):
        return None
    line = finding.range.start_line
    while line > 0 and lines[line - 1].strip() and not lines[line].lstrip().startswith("#"):
        line -= 1
    indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())] if line < len(lines) \
        else ""
    return TextEdit(path=path, range=Range.of_line(line, 0, 0),
                    new_text=f"{indent}<!-- baton: ignore {finding.code} -->\n")


def _non_overlapping(findings: list[Finding]) -> list[TextEdit]:
    """Safe fixes of a document, skipping any whose edits overlap an earlier one."""
    taken: list[Range] = []
    out: list[TextEdit] = []
    for f in findings:
        if f.fix is None or not f.fix.safe:
            continue
        if any(_overlaps(e.range, t) for e in f.fix.edits for t in taken):
            continue
        taken.extend(e.range for e in f.fix.edits)
        out.extend(f.fix.edits)
    return out


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll,
                           FIX_ALL], resolve_provider=False))
    @guard(list)
    async def code_action(ls: BatonServer,
                          params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        path = uri_path(uri)
        if path is None:
            return []
        lines = ls.lines_of(path)
        version = ls.open_version(uri)
        cached = ls.results.get(path)
        if cached is None or cached.version != version:
            from .diagnostics import run_check

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
                diag = to_diagnostic(f, lines, ls.lines_of)
                if f.fix is not None:
                    actions.append(types.CodeAction(
                        title=f.fix.title, kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag], is_preferred=f.fix.safe,
                        edit=edits_to_workspace_edit(f.fix.edits, ls.lines_of)))
                suppress = _suppress_edit(path, f, lines)
                if suppress is not None:
                    actions.append(types.CodeAction(
                        title=f"Suppress {f.code} here", kind=types.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        edit=edits_to_workspace_edit([suppress], ls.lines_of)))
        if wants_fix_all:
            edits = _non_overlapping(findings)
            if edits:
                actions.append(types.CodeAction(
                    title="Baton: fix all auto-fixable problems", kind=FIX_ALL,
                    edit=edits_to_workspace_edit(edits, ls.lines_of)))
        return actions

