"""JSON Schemas generated from the pydantic models (committed under `schemas/`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, Protocol

from ..model.checkpoint import Checkpoint, IterationCheckpoint, SupervisorCheckpoint
from ..model.config import BatonConfig
from ..model.events import EventSchema
from ..model.frontmatter_schema import AgentFrontmatter, CommandFrontmatter


class SchemaSource(Protocol):
    """A model class that describes itself as JSON Schema (pydantic's, or the configuration's
    dataclasses, which pydantic describes for it)."""

    def model_json_schema(self, *, by_alias: bool = ...,
                          mode: Literal["validation", "serialization"] = ...
                          ) -> dict[str, Any]: ...


SCHEMAS: dict[str, SchemaSource] = {
    "baton-config.schema.json": BatonConfig,
    "agent-frontmatter.schema.json": AgentFrontmatter,
    "command-frontmatter.schema.json": CommandFrontmatter,
    "events.schema.json": EventSchema,
}


def register(name: str, model: SchemaSource) -> None:
    """Later layers (checkpoints) add their models here."""
    SCHEMAS[name] = model


register("checkpoint.schema.json", Checkpoint)
register("iteration-checkpoint.schema.json", IterationCheckpoint)
register("supervisor-checkpoint.schema.json", SupervisorCheckpoint)


def generate(name: str) -> dict[str, Any]:
    model = SCHEMAS[name]
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://baton-lsp.dev/schemas/{name}", **schema}


def render(name: str) -> str:
    return json.dumps(generate(name), indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def write_schemas(out: Path, dry_run: bool = False) -> list[str]:
    """Write every schema into `out`; returns the names whose content changed (or would)."""
    changed = []
    if not dry_run:
        out.mkdir(parents=True, exist_ok=True)
    for name in sorted(SCHEMAS):
        text = render(name)
        target = out / name
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current != text:
            changed.append(name)
            if not dry_run:
                tmp = target.with_suffix(".tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(target)
    return changed
