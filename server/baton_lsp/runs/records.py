"""The two files bash tooling reads: `errors.jsonl` and the workflow state file.

Both keep the real formats (formats.md §5) so `/errors` and sourced bash blocks keep working
while Baton runs the workflow: one compact JSON object per error line, appended under a lock
and fsynced, rotated at 10 MB keeping five backups; and a sourceable
`.claude/tmp/workflow_<id>.sh` rewritten atomically at every transition.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..model.data import ErrorRecord
from . import confine
from .places import errors_log_path

ROTATE_BYTES = 10 * 1024 * 1024
BACKUPS = 5


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def error_record(*, workflow_id: str, command: str, user_args: str, error_type: str,
                 message: str, source: str, context: Mapping[str, Any] | None = None,
                 stack: list[str] | None = None, root: Path | None = None) -> ErrorRecord:
    """A record in the later (v2) shape, with `status: ERROR`."""
    ctx = dict(context or {})
    if root is not None:
        ctx.setdefault("claude_project_dir", str(root))
        ctx.setdefault("home", os.path.expanduser("~"))
    return ErrorRecord(
        timestamp=utc_now(), environment="production", command=command,
        workflow_id=workflow_id, user_args=user_args, error_type=error_type,
        error_message=message, source=source,
        stack=stack or [f"0 {source} baton/{platform.python_version()}"],
        context=ctx, status="ERROR")


def append_error(root: Path, record: ErrorRecord) -> None:
    """Append one line durably; concurrent workflows never interleave their lines. The log
    is reached inside the workspace only (`confine`): never through a link leaving it."""
    path = errors_log_path(root)
    line = (record.json_line() + "\n").encode("utf-8", "replace")
    with confine.open_append(root, path) as fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size + len(line) > ROTATE_BYTES:
            _rotate(root, path)
            with confine.open_append(root, path) as fresh:
                fcntl.flock(fresh, fcntl.LOCK_EX)
                _append(fresh, line)
            return
        _append(fd, line)


def _append(fd: int, line: bytes) -> None:
    view = memoryview(line)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _rotate(root: Path, path: Path) -> None:
    for i in range(BACKUPS - 1, 0, -1):
        older = path.with_name(f"{path.name}.{i}")
        if os.path.lexists(older):
            confine.rename(root, older, path.with_name(f"{path.name}.{i + 1}"))
    confine.rename(root, path, path.with_name(f"{path.name}.1"))


# -- state file ------------------------------------------------------------------------------


def state_file_path(root: Path, workflow_id: str) -> Path:
    return root / ".claude" / "tmp" / f"workflow_{workflow_id}.sh"


def shell_quote(value: str) -> str:
    """Double-quoted bash value. Beyond the real escaping (backslash, quote) `$` and backtick
    are escaped too: a description such as `$(touch pwned)` must stay text when sourced."""
    out = value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`",
                                                                                    "\\`")
    return f'"{out}"'


def write_state_file(root: Path, workflow_id: str, values: Mapping[str, Any]) -> Path:
    """Rewrite the state file with the current values, the first three lines as init
    writes them; lists become `<KEY>_COUNT` + `<KEY>_<i>` like COMPLETED_STATE_i."""
    path = state_file_path(root, workflow_id)
    lines = [f"export CLAUDE_PROJECT_DIR={shell_quote(str(root))}",
             f"export WORKFLOW_ID={shell_quote(workflow_id)}",
             f"export STATE_FILE={shell_quote(str(path))}"]
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (dict, list)) and key.endswith("_JSON"):
            text = json.dumps(value, ensure_ascii=False)
        else:
            text = str(value)
        lines.append(f"export {key}={shell_quote(text)}")
    confine.write_atomic(root, path, ("\n".join(lines) + "\n").encode("utf-8"),
                         durable=False)
    return path
