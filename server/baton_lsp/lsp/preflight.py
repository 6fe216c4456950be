"""BTN002 on the configuration file: what `baton run` would refuse before any agent runs.

The same checks as the engine's preflight (workflow/preflight.py) — CLI on PATH and
answering `--version` (only in a trusted workspace: nothing is executed otherwise),
credentials, an artifact directory the CLI may write, gemini's folder trust — run in the
background after indexing and whenever the configuration changes, so a missing login shows
in the editor instead of failing a launched workflow. Model problems in agent files are
BTN207's, on the agent file itself, and are not repeated.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from ..model.base import Finding, Range, Severity
from ..paths import norm
from ..runs.confine import read_head
from ..workflow.preflight import Problem, VersionTimeout, cli_version, workspace_check
from ..workspace.config import config_sources
from .convert import path_to_uri
from .diagnostics import index_workspace, publish
from .server import config_finding

if TYPE_CHECKING:
    from ..model.config import WorkflowSettings
    from .server import BatonServer

log = logging.getLogger(__name__)

CODE, RULE = "BTN002", "agent-cli-preflight"
_versions: dict[tuple[str, int, int], str | Exception] = {}


def cached_version(executable: str, env: Mapping[str, str], timeout: float) -> str:
    """`--version` once per installed binary (path, mtime, size): the editor re-checks on
    every configuration change, and starting a CLI costs up to a second. A timeout is not
    kept: it says the machine was busy, not what the binary is, so the next check asks
    again."""
    try:
        st = os.stat(executable)
    except OSError:
        return cli_version(executable, env, timeout)
    key = (executable, st.st_mtime_ns, st.st_size)
    if key not in _versions:
        try:
            _versions[key] = cli_version(executable, env, timeout)
        except VersionTimeout:
            raise
        except (OSError, ValueError) as exc:
            _versions[key] = exc
    value = _versions[key]
    if isinstance(value, Exception):
        raise value
    return value


def _anchor(lines: list[str], setting: str | None) -> int:
    """The line of `setting` (`workflow.codex.sandbox`): its key inside its table, else the
    table's header, else the workflow `runner` key, else the `[workflow]` table, else 0."""
    table, _, key = (setting or "workflow.runner").rpartition(".")
    header = re.compile(rf"^\s*\[(?:tool\.baton\.)?{re.escape(table)}\]")
    start = next((i for i, text in enumerate(lines) if header.match(text)), None)
    if start is not None:
        for i in range(start + 1, len(lines)):
            if lines[i].lstrip().startswith("["):
                break
            if re.match(rf"\s*{re.escape(key)}\s*=", lines[i]):
                return i
        return start
    return _anchor(lines, "workflow.runner") if setting != "workflow.runner" else 0


def findings_for(source: Path, problems: list[Problem]) -> list[Finding]:
    """Workspace-level problems as BTN002 findings on the configuration file."""
    lines = _lines(source)
    out = []
    for problem in problems:
        if problem.path is not None:
            continue  # about an agent file: BTN207 reports it there
        line = _anchor(lines, problem.setting)
        width = len(lines[line]) if line < len(lines) else 0
        out.append(Finding.model_construct(
            code=CODE, rule=RULE, severity=Severity.WARNING,
            message=f"`baton run` would stop before any agent runs: {problem.message}",
            path=str(source), range=Range.of_line(line, 0, width), related=[], fix=None,
            tags=[]))
    return out


def _lines(path: Path) -> list[str]:
    """The configuration file's lines, to place a finding: read from its directory's
    workspace as the configuration is (`read_head`: a FIFO swapped in is not waited on)."""
    root = path.parent.parent if path.parent.name == ".claude" else path.parent
    try:
        return read_head(root, path, 1 << 20)[0].decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _not_run(executable: str, env: Mapping[str, str], timeout: float) -> str:
    return "not run: the workspace is not trusted"


def _check_root(root: Path, settings: WorkflowSettings,
                trusted: bool) -> tuple[Path | None, list[Problem]]:
    """In an untrusted workspace nothing is executed: the configured `executable` comes
    from the repository, so only its presence is checked, not its `--version`."""
    sources = config_sources(root)
    return (sources[-1] if sources else None), workspace_check(
        root, settings, version_of=cached_version if trusted else _not_run)


async def refresh(ls: BatonServer) -> None:
    """Re-run the checks for every workspace and publish BTN002 where they changed."""
    found: dict[str, list[Finding]] = {}
    trusted = bool(ls.session.settings.trusted or ls.session.initialization_options.get("trusted"))
    for root, idx in list(ls.session.indexes.items()):
        if norm(root) in ls.session.config_errors:
            continue  # BTN001 first: the defaults in use launch no agent CLI
        try:
            source, problems = await asyncio.to_thread(_check_root, Path(root),
                                                       idx.config.workflow, trusted)
        except Exception:
            log.exception("preflight of %s failed", root)
            continue
        if not problems:
            continue
        if source is None:
            text = "; ".join(p.message for p in problems if p.path is None)
            if text and text != ls.preflight_shown:  # once per distinct problem set
                ls.preflight_shown = text
                ls.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"Baton: `baton run` would stop before any agent runs: {text}"))
            continue
        found.setdefault(norm(source), []).extend(findings_for(source, problems))
    ls.session.preflight_findings = found
    publish_config_errors(ls)


def schedule(ls: BatonServer) -> None:
    """Start a refresh in the background (the newest one wins)."""
    task = ls.preflight_task
    if task is not None and not task.done():
        task.cancel()
    ls.preflight_task = asyncio.ensure_future(refresh(ls))


def publish_config_errors(ls: BatonServer) -> None:
    """BTN001 on each broken configuration file and BTN002 (preflight) on each configuration
    that would stop `baton run`; both cleared once fixed."""
    broken = {norm(src): msg for src, msg in ls.session.config_errors.values() if src}
    current = broken.keys() | ls.session.preflight_findings.keys()
    for path in sorted(current | ls.config_error_files):
        findings = list(ls.session.preflight_findings.get(path, []))
        if path in broken:
            findings.insert(0, config_finding(path, broken[path], ls.session.lines_of(path)))
        publish(ls, path, ls.session.open_version(path_to_uri(path)), findings)
    ls.config_error_files = set(current)


async def index_and_check(ls: BatonServer) -> None:
    """Index every workspace, then BTN001 on broken configuration files at once and BTN002
    (preflight) in the background: it starts the agent CLIs."""
    await index_workspace(ls)
    publish_config_errors(ls)
    schedule(ls)
