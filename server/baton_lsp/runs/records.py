"""The two files bash tooling reads: `errors.jsonl` and the workflow state file.

Both keep the real formats (formats.md §5) so `/errors` and sourced bash blocks keep working
while Baton runs the workflow: one compact JSON object per error line, appended under a lock
and fsynced, rotated at 10 MB keeping five backups; and a sourceable
`.claude/tmp/workflow_<id>.sh` rewritten atomically at every transition.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import logging
import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..model.data import ErrorRecord
from ..parse.exports import read_exports
from . import confine
from .places import errors_log_path

log = logging.getLogger(__name__)

ROTATE_BYTES = 10 * 1024 * 1024
BACKUPS = 5
STATE_FILE_LIMIT = 4 * 1024 * 1024
"""The most of a state file read back to carry appended values over."""
SHELL_HOOKS = frozenset({"PATH", "IFS", "HOME", "ENV", "BASH_ENV", "PROMPT_COMMAND",
                         "SHELLOPTS", "BASHOPTS", "CDPATH", "GLOBIGNORE", "PS1", "PS2", "PS3",
                         "PS4", "PYTHONPATH", "PYTHONSTARTUP", "NODE_OPTIONS"})
"""Names a sourced state file must not set for whoever sources it (with `LD_*`): a line
for them is not carried over, whoever appended it."""


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
    confine.makedirs_own(root, path.parent)
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


def write_state_file(root: Path, workflow_id: str, values: Mapping[str, Any],
                     families: tuple[str, ...] = ()) -> Path:
    """Rewrite the state file with the current values, the first three lines as init
    writes them; lists become `<KEY>_COUNT` + `<KEY>_<i>` like COMPLETED_STATE_i.

    Keys Baton does not own — what an agent or a bash block appended the seeds' way
    (`append_workflow_state`: `export KEY="value"`) — are carried over after Baton's own,
    re-quoted as Baton quotes (an expansion left in a value stays text). Baton owns the
    header's keys, every key of `values` (None included: Baton's key, not set now) and
    `<family><digits>` for each of `families` (`REPORT_PATH_` …): those always win. A line
    appended while the file is replaced is read from the old file and appended after."""
    path = state_file_path(root, workflow_id)
    confine.makedirs_own(root, path.parent)
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
    owned = {"CLAUDE_PROJECT_DIR", "WORKFLOW_ID", "STATE_FILE", *values}
    family = re.compile(f"(?:{'|'.join(map(re.escape, families))})[0-9]+") if families \
        else None

    def foreign(raw: bytes) -> list[str]:
        found = read_exports(raw.decode("utf-8", errors="replace"))
        hooks = sorted(k for k in found if k in SHELL_HOOKS or k.startswith("LD_"))
        if hooks:
            log.warning("not carrying %s over in the state file: variables the shell or the "
                        "loader act on are never a workflow's values", ", ".join(hooks))
        return [f"export {k}={shell_quote(v)}" for k, v in found.items()
                if k not in owned and k not in hooks and not (family and family.fullmatch(k))]

    fd: int | None = None
    with contextlib.ExitStack() as stack:
        try:
            fd = stack.enter_context(confine.open_read(root, path))[0]
        except FileNotFoundError:
            pass
        except OSError as exc:  # a FIFO or a link out planted there: replaced, never read
            log.warning("not carrying values over from the state file: %s",
                        confine.describe(exc))
        seen = _read_more(fd) if fd is not None else b""
        lines += foreign(seen)
        confine.write_atomic(root, path, ("\n".join(lines) + "\n").encode("utf-8"),
                             durable=False)
        late = _read_more(fd) if fd is not None else b""
        if late:  # appended to the old file between the read and the rename
            tail = foreign(seen[seen.rfind(b"\n") + 1:] + late)
            if tail:
                with confine.open_append(root, path) as out:
                    _append(out, ("\n".join(tail) + "\n").encode("utf-8"))
    return path


def _read_more(fd: int) -> bytes:
    """What is left to read from `fd`, at most `STATE_FILE_LIMIT` bytes."""
    chunks, total = [], 0
    while total < STATE_FILE_LIMIT and (chunk := os.read(fd, 1 << 16)):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)
