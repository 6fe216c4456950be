"""Start-up, configuration, file watching, logging to the client and parent-process watch."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import threading
from pathlib import Path
from typing import Any

from lsprotocol import types

from ..paths import norm
from . import diagnostics
from .runs import follower
from .server import BatonServer, ClientSettings, uri_path
from .wire import log_message, path_to_uri

log = logging.getLogger(__name__)

PARENT_POLL_SECONDS = 3.0
_WATCH_GLOBS = ("**/.claude/**", "**/specs/**", "**/pyproject.toml", "**/baton.toml",
                "**/docs/**/plans/**", "**/PLAN.md", "**/plan.md", "**/.claude-plugin/*.json",
                "**/agents/**/*.md", "**/commands/**/*.md", "**/skills/**/SKILL.md",
                "**/.opencode/**", "**/opencode.json", "**/opencode.jsonc", "**/.mcp.json",
                "**/CLAUDE.md", "**/CLAUDE.local.md")
"""Everything discovery classifies, wherever a plugin keeps it, and what changes the rules."""


class ClientLogHandler(logging.Handler):
    """Forward log records to the client as `window/logMessage` (stdout is the protocol)."""

    def __init__(self, server: BatonServer) -> None:
        super().__init__()
        self.server = server
        self.loop_thread = threading.get_ident()
        self.loop: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = log_message(record.levelno, self.format(record))
            if threading.get_ident() == self.loop_thread:
                if self.loop is None:
                    with contextlib.suppress(RuntimeError):
                        self.loop = asyncio.get_running_loop()
                self.server.send_json(message)
            elif self.loop is not None:  # a checker thread: never write the transport here
                self.loop.call_soon_threadsafe(self.server.send_json, message)
        except Exception:  # logging must never take the server down
            pass


def _windows_process_alive(pid: int) -> bool:
    """On Windows `os.kill(pid, 0)` is no probe: signal 0 is CTRL_C_EVENT (a console Ctrl+C
    to a process group) and never reports a missing pid, so ask for the exit code instead.
    typeshed declares `WinDLL` and `get_last_error` on Windows only, hence the two ignores:
    the probe's decisions are tested on every OS with a stand-in kernel32."""
    import ctypes  # Windows only
    from ctypes import wintypes

    kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)  # type: ignore[attr-defined]
    kernel32.OpenProcess.restype = wintypes.HANDLE
    kernel32.OpenProcess.argtypes = (wintypes.DWORD, wintypes.BOOL, wintypes.DWORD)
    kernel32.GetExitCodeProcess.argtypes = (wintypes.HANDLE, ctypes.POINTER(wintypes.DWORD))
    kernel32.CloseHandle.argtypes = (wintypes.HANDLE,)
    process_query_limited_information, still_active, error_access_denied = 0x1000, 259, 5
    handle = kernel32.OpenProcess(process_query_limited_information, False, pid)
    if not handle:
        error: int = ctypes.get_last_error()  # type: ignore[attr-defined]
        return error == error_access_denied
    try:
        code = wintypes.DWORD()
        if not kernel32.GetExitCodeProcess(handle, ctypes.byref(code)):
            return True
        return code.value == still_active
    finally:
        kernel32.CloseHandle(handle)


def _process_alive(pid: int) -> bool:
    if os.name == "nt":
        return _windows_process_alive(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def watch_parent(ls: BatonServer, pid: int) -> None:
    """Exit when the editor process is gone, so no orphaned server keeps running."""
    while True:
        await asyncio.sleep(PARENT_POLL_SECONDS)
        if not _process_alive(pid):
            log.warning("client process %d is gone; exiting", pid)
            ls.flush_writer(2.0)  # the line above waits in the writer thread's queue
            os._exit(0)


async def fetch_settings(ls: BatonServer) -> None:
    ws = ls.client_capabilities.workspace
    if not (ws and ws.configuration):
        return
    try:
        result = await asyncio.wait_for(ls.workspace_configuration_async(
            types.ConfigurationParams(items=[types.ConfigurationItem(section="baton")])), 10)
    except Exception as exc:
        log.warning("could not read the `baton` settings from the client: %s", exc)
        return
    raw = result[0] if result else None
    merged = {**ls.session.initialization_options.get("settings", {}), **(raw or {})}
    ls.session.use_settings(ClientSettings.from_raw(merged))


def _engine_history(path: str) -> bool:
    """A file the workflow engine writes into a workflow's checkpoint directory (its
    history, `run.json`, `lock`, `logs/…`)."""
    from ..workspace.discovery import engine_history_dir  # the core loads on first use

    parent = os.path.dirname(path)
    return engine_history_dir(parent) or (os.path.basename(parent) == "logs" and
                                          engine_history_dir(os.path.dirname(parent)))


async def _index(ls: BatonServer) -> None:
    """Index the workspaces and run the preflight; imports the core on first use, after the
    server answered `initialize`."""
    from . import preflight  # the core loads on first use

    await preflight.index_and_check(ls)


async def revalidate_all(ls: BatonServer) -> None:
    ls.session.reload_configs()
    documents = list(ls.session.documents.values())
    for doc in documents:  # the indexes were configured anew: their overlays again
        ls.session.index_for(doc.path).set_overlay(doc.path, doc.text)
    await _index(ls)
    for doc in documents:
        await diagnostics.validate(ls, doc.uri, dependents=False)


FIRST_CHECKS_WAIT = 5.0
"""Seconds indexing waits for the documents opened at start-up to be checked first."""


async def first_checks(ls: BatonServer) -> None:
    """Let the checks of documents opened at start-up finish before anything else starts
    (following workflows, indexing the tree, the preflight): they are what the user looks
    at, and on a small machine the rest would compete with them for the CPU. Then the
    objects start-up created are frozen out of the garbage collector's way."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(ls.checks.wait_idle(), FIRST_CHECKS_WAIT)
    ls.flush_writer(1.0)  # the first diagnostics go out before anything else runs
    gc.freeze()  # no full collection first: it held up indexing for a few dozen objects


def register(server: BatonServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: BatonServer, params: types.InitializeParams) -> None:
        with contextlib.suppress(RuntimeError):  # handlers run on the event loop thread
            ls.event_loop = asyncio.get_running_loop()
        ls.session.initialize(params.initialization_options,
                      [f.uri for f in params.workspace_folders or []],
                      params.root_uri, params.root_path)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: BatonServer, params: types.InitializedParams) -> None:
        if ls.process_id:
            ls.parent_watch = asyncio.ensure_future(watch_parent(ls, ls.process_id))
        await fetch_settings(ls)
        ws = ls.client_capabilities.workspace
        if ws and ws.did_change_watched_files and ws.did_change_watched_files.dynamic_registration:
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                    types.Registration(
                        id="baton-watch", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(
                            watchers=[types.FileSystemWatcher(glob_pattern=g)
                                      for g in _WATCH_GLOBS]))]))
            except Exception as exc:
                log.info("file watching not registered: %s", exc)
        await first_checks(ls)
        ls.session.reload_configs()
        follower(ls).start()  # before indexing: no checkpoint written meanwhile is missed
        await _index(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: BatonServer,
                                       params: types.DidChangeConfigurationParams) -> None:
        settings: Any = params.settings
        if isinstance(settings, dict) and isinstance(settings.get("baton"), dict):
            ls.session.use_settings(ClientSettings.from_raw(settings["baton"]))
        else:
            await fetch_settings(ls)
        await revalidate_all(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_workspace_folders(
            ls: BatonServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        """Folders added later are indexed and their workflows followed; a removed folder's
        diagnostics are withdrawn and its workflows no longer watched."""
        ls.session.forget_roots()
        before = set(ls.session.discover_roots())
        for folder in params.event.removed:
            path = uri_path(folder.uri)
            if path is not None:
                ls.session.folders = [f for f in ls.session.folders if str(f) != path]
        for folder in params.event.added:
            path = uri_path(folder.uri)
            if path is not None and Path(path) not in ls.session.folders:
                ls.session.folders.append(Path(path))
        after = set(ls.session.discover_roots())
        for root in before - after:
            follower(ls).unwatch(root)
            ls.session.indexes.pop(norm(root), None)
            prefix = str(root) + os.sep
            for path in [p for p in ls.session.results if p.startswith(prefix)]:
                ls.session.withdraw(path)
                if not ls.pull_diagnostics:
                    diagnostics.send(ls, path_to_uri(path), None, [])
        if after - before:
            ls.session.reload_configs()
            follower(ls).start()
            await _index(ls)

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    async def did_change_watched_files(ls: BatonServer,
                                       params: types.DidChangeWatchedFilesParams) -> None:
        config_changed = False
        if any(c.type != types.FileChangeType.Changed for c in params.changes):
            ls.session.forget_roots()  # a `.claude/` or `specs/` may have come or gone
        for change in params.changes:
            path = uri_path(change.uri)
            if path is None:
                continue
            if _engine_history(path) and ls.session.open_document(change.uri) is None:
                continue  # the run follower follows workflow directories itself
            name = os.path.basename(path)
            if name in ("pyproject.toml", "baton.toml") or (
                    name == "plugin.json"
                    and os.path.basename(os.path.dirname(path)) == ".claude-plugin"):
                config_changed = True  # a plugin manifest decides what its files are
                continue
            idx = ls.session.index_for(path)
            created_or_deleted = change.type != types.FileChangeType.Changed
            others = idx.changed(path, created_or_deleted=created_or_deleted)
            uri = change.uri
            if ls.session.open_document(uri) is None:
                if change.type == types.FileChangeType.Deleted:
                    ls.session.withdraw(path)
                    if not ls.pull_diagnostics:
                        diagnostics.send(ls, uri, None, [])
                elif idx.kind_of(path) is not None:
                    await diagnostics.validate(ls, uri, dependents=False)
            for other in sorted(others):
                await diagnostics.validate(ls, path_to_uri(other), dependents=False)
        if config_changed:
            await revalidate_all(ls)

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: BatonServer, params: Any) -> None:
        ls.stopping.set()
        ls.session.save_results()  # what was checked since indexing, for the next start
        follower(ls).stop()
        ls.checks.stop()
        ls.executor.shutdown(wait=False, cancel_futures=True)
