"""The `baton run` that repeats a finished workflow, as GitHub Actions' *Re-run* does: the
request its checkpoint records (description, scope, complexity, topics, plan) and its pinned
identity (the runner and every `[workflow]` setting as it ran), so a configuration edited
since does not change the re-run. One definition for `baton rerun` and the editor's
`baton.server.workflow.rerun`.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import CheckpointError


class NotRerunnable(Exception):
    """The workflow cannot be re-run: no readable checkpoint, not finished, no description."""


def toml_value(value: object) -> str:
    """`value` as a TOML value for `--set table.key=VALUE`; tables become inline tables with
    quoted keys (model names hold dots)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(v)}"
                               for k, v in value.items() if v is not None) + "}"
    return json.dumps(str(value))  # a TOML basic string is a JSON string


def rerun_args(root: Path, wid: str) -> tuple[list[str], str]:
    """`baton run` options repeating workflow `wid`, and its description (to pass after
    `--`). Raises NotRerunnable."""
    # the record's pydantic models: not for toml_value
    from .record import RecordError, read_record
    from .store import CheckpointStore, list_workflows, valid_id

    if not valid_id(wid) or wid not in list_workflows(root):
        raise NotRerunnable(f"no workflow {wid!r} in {root}")
    store = CheckpointStore(root, wid)
    try:
        entry = store.latest()
        record = read_record(entry.data or {}, str(entry.path))
    except (CheckpointError, RecordError, OSError) as exc:
        raise NotRerunnable(f"workflow {wid}: {exc}") from None
    if not record.status.finished or store.locked():  # one going is cancelled first
        raise NotRerunnable(f"workflow {wid} has not finished ({record.status}); "
                            "cancel it first")
    req = record.baton.request
    description = req.description or record.workflow_description or ""
    if not description:
        raise NotRerunnable(f"workflow {wid} recorded no description")
    opts = ["run"]
    scope = req.scope or record.scope
    if scope:
        opts.append(f"--scope={scope}")
    if req.complexity is not None:
        opts.append(f"--complexity={req.complexity}")
    opts += [f"--topic={t}" for t in req.topics]
    if req.plan_path:
        opts.append(f"--plan={req.plan_path}")
    identity = record.baton.identity
    if identity is not None:
        if identity.runner:
            opts.append(f"--runner={identity.runner}")
        for key, value in identity.settings.items():
            if value is not None:
                opts += ["--set", f"workflow.{key}={toml_value(value)}"]
    return opts, description
