"""Diagnostics: push on open/save and debounced change, pull when the client supports it,
background indexing of the whole tree with progress, cross-file re-checks of dependents.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .cancel import CancelToken, map_cancellable, run_cancellable
from .convert import path_to_uri
from .scheduling import DEPENDENT, EDIT
from .server import BatonServer, DocResult, guard, uri_path
from .session import INDEXED
from .wire import diagnostic_json, publish_diagnostics

if TYPE_CHECKING:
    from ..model.base import Finding
    from .scheduling import Entry

log = logging.getLogger(__name__)


async def run_check(ls: BatonServer, path: str, memo: bool = False) -> list[Finding]:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(ls.executor, ls.session.check, path, memo)


def publish(ls: BatonServer, path: str, version: int | None, findings: list[Finding]) -> None:
    """Keep `findings` as `path`'s result and push them, unless the client already has
    exactly these for this version (a file re-checked because another changed)."""
    previous = ls.session.results.get(path)
    ls.session.results[path] = DocResult(version, findings)
    if ls.pull_diagnostics:
        if previous is None or previous.findings != findings:
            ls.checks_changed = True
        return
    if previous is not None and previous.version == version and previous.findings == findings \
            and (path in ls.session.published or not findings):
        return
    ls.session.published.add(path)
    lines = ls.session.lines_of(path)
    send(ls, path_to_uri(path), version,
         [diagnostic_json(f, lines, ls.session.lines_of) for f in findings])


def send(ls: BatonServer, uri: str, version: int | None,
         diagnostics: list[dict[str, Any]]) -> None:
    """Push `uri`'s diagnostics (already JSON, `wire.diagnostic_json`)."""
    ls.send_json(publish_diagnostics(uri, version, diagnostics))


async def validate(ls: BatonServer, uri: str, delay: float = 0.0,
                   dependents: bool = True) -> None:
    """Check one document (after `delay`), publish if still current, then queue the files
    that depend on it."""
    path = uri_path(uri)
    if path is None:
        return
    if delay:
        await asyncio.sleep(delay)
    version = ls.session.open_version(uri)
    if ls.stopping.is_set():
        return  # after `shutdown`: nobody reads it, and the executor takes no more work
    try:
        findings = await run_check(ls, path)
    except Exception:
        if ls.stopping.is_set():  # shut down while this check waited for the executor
            return
        log.exception("checking %s failed", path)
        return
    if ls.session.open_version(uri) != version:
        return  # superseded by a newer edit: that edit's own check publishes
    publish(ls, path, version, findings)
    if dependents:
        queue_dependents(ls, path)


def queue_dependents(ls: BatonServer, path: str) -> None:
    """Queue the files whose findings may change with `path`'s (once each, however many of
    their dependencies changed before their check starts)."""
    for other in sorted(ls.session.index_for(path).dependents(path)):
        ls.checks.add(other, path_to_uri(other), DEPENDENT, dependents=False)


async def check_entry(ls: BatonServer, entry: Entry) -> None:
    """Run one queued check (the handler of `ls.checks`)."""
    version = ls.session.open_version(entry.uri)
    try:
        findings = await run_check(ls, entry.path)
    except Exception:
        log.exception("checking %s failed", entry.path)
        return
    if ls.session.open_version(entry.uri) != version:
        return  # edited meanwhile: queued again, that check publishes
    publish(ls, entry.path, version, findings)
    if entry.dependents:
        queue_dependents(ls, entry.path)


def checks_idle(ls: BatonServer) -> None:
    """The queue drained: a pull client is asked to pull again if results changed."""
    if ls.checks_changed and ls.pull_diagnostics and ls.refresh_support:
        ls.workspace_diagnostic_refresh(None)
    ls.checks_changed = False


def schedule(ls: BatonServer, uri: str, delay: float) -> None:
    """Queue `uri` for a check after `delay`, newest first; an earlier request for the same
    document that has not started yet is replaced (its delay restarts)."""
    path = uri_path(uri)
    if path is not None:
        ls.checks.add(path, uri, EDIT, delay)


async def index_workspace(ls: BatonServer) -> None:
    """Check every file of every workspace once, with work-done progress."""
    walked = ls.session.walk_workspaces()
    files = [path for _, path, _ in walked]
    roots = ls.session.discover_roots()
    token = str(uuid.uuid4())
    progress = False
    window = ls.client_capabilities.window
    if window and window.work_done_progress:
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 5)
            progress = True
        except Exception:
            log.info("client refused a progress token; indexing silently")
    if progress:
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title="Baton: indexing .claude/", message=f"{len(files)} files", percentage=0,
            cancellable=False))
    loop = asyncio.get_running_loop()
    cache = ls.session.result_cache()
    if cache is not None:
        cache.new_pass()
    closed = [item for item in walked if item[1] not in ls.session.documents]
    # Open documents are validated by their own events; the others come from the result
    # cache (`baton check`'s too) where it still holds, in one pass on the pool.
    try:
        hits, todo = await loop.run_in_executor(ls.executor, ls.session.cached_findings, closed)
    except Exception:
        log.exception("reading the result cache failed; checking every file")
        hits, todo = {}, [path for _, path, _ in closed]

    def done(path: str, findings: list[Finding]) -> None:
        if findings or path in ls.session.results:
            publish(ls, path, None, findings)
        else:
            ls.session.results[path] = DocResult(None, findings)

    for path, findings in hits.items():
        done(path, findings)
    for i, path in enumerate(todo, len(files) - len(todo) + 1):
        if path in ls.session.documents:
            continue  # opened meanwhile: its own events validate it
        try:
            findings = await run_check(ls, path, memo=True)
        except Exception:
            log.exception("indexing %s failed", path)
            continue
        done(path, findings)
        if progress and (i % 50 == 0 or i == len(files)):
            ls.work_done_progress.report(token, types.WorkDoneProgressReport(
                message=f"{i}/{len(files)} files", percentage=int(100 * i / max(len(files), 1))))
    if progress:
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(
            message=f"checked {len(files)} files"))
    if ls.pull_diagnostics and ls.refresh_support:
        ls.workspace_diagnostic_refresh(None)
    if cache is not None:
        await loop.run_in_executor(ls.executor, cache.save)
    log.info(INDEXED, len(files), len(roots), len(hits))


def register(server: BatonServer) -> None:
    server.checks.handler = lambda entry: check_entry(server, entry)
    server.checks.idle = lambda: checks_idle(server)

    # The session applied the document's open, edit or close before these run
    # (`server.BatonProtocol`): here its check is queued.
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    @guard(None)
    def did_open(ls: BatonServer, params: types.DidOpenTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    @guard(None)
    def did_change(ls: BatonServer, params: types.DidChangeTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, ls.session.settings.debounce_ms / 1000)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    @guard(None)
    def did_save(ls: BatonServer, params: types.DidSaveTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    @guard(None)
    def did_close(ls: BatonServer, params: types.DidCloseTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, 0.0)  # back to what is on disk

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
        identifier="baton", inter_file_dependencies=True, workspace_diagnostics=True))
    async def document_diagnostic(
        ls: BatonServer, params: types.DocumentDiagnosticParams,
    ) -> types.RelatedFullDocumentDiagnosticReport:
        path = uri_path(params.text_document.uri)
        if path is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[])
        version = ls.session.open_version(params.text_document.uri)
        cached = ls.session.results.get(path)
        if cached is not None and cached.version == version and version is not None:
            return types.RelatedFullDocumentDiagnosticReport(  # one file: quick enough here
                items=ls.diagnostics_for(path, cached.findings))

        def check(token: CancelToken) -> tuple[list[Finding], list[types.Diagnostic]]:
            token.check()  # cancelled while queued behind other checks
            findings = ls.session.check(path)
            token.check()
            return findings, ls.diagnostics_for(path, findings)

        findings, items = await run_cancellable(ls, check, what="textDocument/diagnostic")
        ls.session.results[path] = DocResult(version, findings)
        return types.RelatedFullDocumentDiagnosticReport(items=items)

    @server.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(
        ls: BatonServer, params: types.WorkspaceDiagnosticParams,
    ) -> types.WorkspaceDiagnosticReport:
        files = await run_cancellable(ls, lambda token: _workspace_files(ls, token),
                                      what="workspace/diagnostic")
        todo = [(path, uri) for path, uri in files
                if ls.session.open_document(uri) is None]  # open ones are pulled per document

        def report(item: tuple[str, str]) -> types.WorkspaceDocumentDiagnosticReport:
            path, uri = item
            cached = ls.session.results.get(path)  # kept current by indexing and file events
            findings = cached.findings if cached is not None else ls.session.check(path)
            return types.WorkspaceFullDocumentDiagnosticReport(
                uri=uri, items=ls.diagnostics_for(path, findings), version=None)

        items = await map_cancellable(ls, todo, report, what="workspace/diagnostic",
                                      label=lambda item: item[0])
        return types.WorkspaceDiagnosticReport(items=items)


def _workspace_files(ls: BatonServer, token: CancelToken) -> list[tuple[str, str]]:
    """(path, uri) of every file of every workspace (on the pool: it walks the folders)."""
    out: list[tuple[str, str]] = []
    for root in ls.session.discover_roots():
        token.check()
        out.extend((path, path_to_uri(path)) for path in ls.session.index_for_root(root).files())
    return out
