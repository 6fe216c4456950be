"""Arguments of the workflow commands (`baton.server.workflow.*`), validated by pydantic.

A module of its own, imported by the first command that needs it: pydantic is not on the
server's path to answering `initialize`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pygls.exceptions import JsonRpcInvalidParams


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workspace: str | None = Field(None, description="workspace root (path or file URI); "
                                  "default: the only/first one")


class StartArgs(_Args):
    description: str = Field(min_length=1)
    scope: str = "full-implementation"
    runner: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$")
    plan: str | None = None
    complexity: int | None = Field(None, ge=1, le=4)

    @field_validator("scope")
    @classmethod
    def _known_scope(cls, value: str) -> str:
        from ..model.states import Scope  # the core loads after `initialize` was answered

        scopes = [s.value for s in Scope]
        if value not in scopes:
            raise ValueError(f"unknown scope {value!r}: expected one of {', '.join(scopes)}")
        return value


class IdArgs(_Args):
    id: str = Field(min_length=1)


class ResumeArgs(IdArgs):
    at: int | None = Field(None, ge=0)
    force: bool = False
    trust: bool = False
    """Resume a checkpoint this user's Baton did not sign (`--trust-checkpoint`)."""


class AtArgs(IdArgs):
    at: int | None = Field(None, ge=0)


class StepArgs(IdArgs):
    step: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
    attempt: int | None = Field(None, ge=1)


class NoArgs(_Args):
    pass


class OpenArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(min_length=1)
    line: int | None = Field(None, ge=0)


def parse(command: str, model: type[BaseModel], args: tuple[Any, ...]) -> Any:
    """One JSON object (or nothing, when every field is optional) → `model`, else
    InvalidParams naming the command and the offending fields."""
    if len(args) == 1 and isinstance(args[0], list):  # some clients nest the arguments
        args = tuple(args[0])
    if not args:
        raw: Any = {}
    elif len(args) == 1 and args[0] is None:
        raw = {}
    elif len(args) == 1:
        raw = args[0]
    else:
        raise JsonRpcInvalidParams(f"{command} takes one object argument, got {len(args)}")
    if not isinstance(raw, dict):
        raise JsonRpcInvalidParams(f"{command} takes one object argument, got "
                                   f"{type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'argument'}: {e['msg']}"
                             for e in exc.errors())
        raise JsonRpcInvalidParams(f"{command}: invalid arguments: {problems}") from None
