"""Core vocabulary shared by every layer: ranges, findings and fixes.

Ranges are 0-based (line, character) with characters counted in Python code points; the
LSP layer converts to UTF-16 so the core never needs to know about encodings.
"""

from __future__ import annotations

import copy
import inspect
import json
import types
import typing
from collections.abc import Iterator
from enum import Enum, StrEnum
from typing import Any, ClassVar, TypeVar

RULE_DOCS_URL = "https://baton-lsp.dev/rules/{code}"
"""Where a rule's documentation lives (`baton rule CODE` prints the same text)."""


def rule_docs_url(code: str) -> str:
    return RULE_DOCS_URL.format(code=code)


class RecordError(ValueError):
    """`Model.model_validate` refused a value: the field's path and what was wrong. A
    ValueError, as pydantic's ValidationError is, so callers catch either the same way."""


class FieldSpec:
    """One field of a `Model`: its name and default (what pydantic's `FieldInfo` tells the
    code base: `default` and `is_required()`)."""

    __slots__ = ("default", "name", "required")

    def __init__(self, name: str, default: Any, required: bool) -> None:
        self.name = name
        self.default = default
        self.required = required

    def is_required(self) -> bool:
        return self.required

    def __repr__(self) -> str:
        return f"FieldSpec({self.name!r}, required={self.required})"


_M = TypeVar("_M", bound="Model")
_new = object.__new__
_set = object.__setattr__
_MUTABLE = (list, dict, set)
_SKIP = ("ClassVar", "typing.ClassVar")


def _fresh(value: Any) -> Any:
    """A default as each instance gets it: mutable ones copied (as pydantic copies them)."""
    if isinstance(value, _MUTABLE):
        return copy.deepcopy(value) if value else type(value)()
    return value


def _rebuild(cls: type[Model], state: dict[str, Any], fields_set: frozenset[str]) -> Model:
    obj = _new(cls)
    _set(obj, "__dict__", state)
    _set(obj, "_fields_set", fields_set)
    return obj


class Model:
    """Base of every parse record: the records Baton's own parsers build from Python values.

    A small class instead of pydantic's `BaseModel`: importing pydantic alone cost a cold
    `baton check` more than its rules on a small tree. It keeps the part of pydantic's API the
    code base uses (`model_construct`, `model_validate`, `model_dump`, `model_copy`,
    `model_fields`, equality, hashing when `model_config = {"frozen": True}`, mutable
    defaults copied per instance). Files whose models validate untrusted JSON (checkpoints,
    run records, configuration) use pydantic, imported when such a file is read."""

    __slots__ = ("__dict__", "_fields_set")
    _fields_set: frozenset[str]

    model_config: ClassVar[dict[str, Any]] = {}
    model_fields: ClassVar[dict[str, FieldSpec]] = {}
    _frozen: ClassVar[bool] = False
    _hints: ClassVar[dict[str, Any] | None] = None
    _names: ClassVar[tuple[str, ...]] = ()
    _every_field: ClassVar[frozenset[str]] = frozenset()
    """`frozenset(_names)`: the fields set of a record given every field, one shared set
    rather than one built per record (frozen: `__setattr__` makes a new one)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        fields: dict[str, FieldSpec] = {}
        for base in reversed(cls.__mro__[1:]):
            if issubclass(base, Model):
                fields.update(base.__dict__.get("model_fields", {}))
        for name, ann in inspect.get_annotations(cls).items():
            text = ann if isinstance(ann, str) else repr(ann)
            if name.startswith("_") or text.startswith(_SKIP) or name in ("model_config",
                                                                          "model_fields"):
                continue
            if name in cls.__dict__:
                fields[name] = FieldSpec(name, cls.__dict__[name], False)
            elif name in fields and not fields[name].required:
                fields[name] = FieldSpec(name, fields[name].default, False)
            else:
                fields[name] = FieldSpec(name, None, True)
        cls.model_fields = fields
        cls._names = tuple(fields)
        cls._every_field = frozenset(fields)
        cls._frozen = bool(cls.model_config.get("frozen", False))
        cls._hints = None
        if cls._frozen:
            cls.__hash__ = Model._frozen_hash  # type: ignore[assignment,method-assign]

    def __init__(self, **data: Any) -> None:
        if tuple(data) == self._names:  # every field, in order, as the parsers give them
            _set(self, "__dict__", data)  # a fresh dict of its own (`**data`)
            _set(self, "_fields_set", self._every_field)
            return
        fields = self.model_fields
        unknown = [name for name in data if name not in fields]
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {unknown[0]!r}")
        state: dict[str, Any] = {}
        for name, spec in fields.items():
            if name in data:
                state[name] = data[name]
            elif spec.required:
                raise TypeError(f"{type(self).__name__}: field {name!r} is required")
            else:
                state[name] = _fresh(spec.default)
        _set(self, "__dict__", state)
        _set(self, "_fields_set", frozenset(data))

    @classmethod
    def model_construct(cls: type[_M], **data: Any) -> _M:
        """Like `cls(**data)` without its checks (pydantic's name): unknown keys are dropped,
        missing required fields left out."""
        obj = _new(cls)
        state: dict[str, Any] = {}
        given: set[str] = set()
        for name, spec in cls.model_fields.items():
            if name in data:
                state[name] = data[name]
                given.add(name)
            elif not spec.required:
                state[name] = _fresh(spec.default)
        _set(obj, "__dict__", state)
        _set(obj, "_fields_set", frozenset(given))
        return obj

    @classmethod
    def model_validate(cls: type[_M], obj: Any) -> _M:
        """A record from decoded JSON (the result cache replays findings this way): nested
        records, enums, lists and dicts converted by the field types, unknown keys dropped."""
        return _convert(cls, obj, cls.__name__)  # type: ignore[no-any-return]

    @classmethod
    def _field_types(cls) -> dict[str, Any]:
        hints = cls.__dict__.get("_hints")
        if hints is None:
            every = typing.get_type_hints(cls)
            hints = {name: every[name] for name in cls.model_fields}
            cls._hints = hints
        return hints

    @property
    def model_fields_set(self) -> frozenset[str]:
        return self._fields_set

    def model_dump(self, *, mode: str = "python", exclude_none: bool = False,
                   exclude_unset: bool = False,
                   exclude: set[str] | None = None) -> dict[str, Any]:
        """The fields as plain values, nested records as dicts; `mode="json"` gives what
        `json.dumps` takes (enum values, lists for tuples)."""
        as_json = mode == "json"
        out: dict[str, Any] = {}
        for name in self.model_fields:
            if name not in self.__dict__ or (exclude and name in exclude) \
                    or (exclude_unset and name not in self._fields_set):
                continue
            value = self.__dict__[name]
            if exclude_none and value is None:
                continue
            out[name] = _dump(value, as_json, exclude_none)
        return out

    def model_dump_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False,
                          separators=(",", ":"))

    def model_copy(self: _M, *, update: dict[str, Any] | None = None,
                   deep: bool = False) -> _M:
        state = copy.deepcopy(self.__dict__) if deep else dict(self.__dict__)
        fields_set = self._fields_set
        if update:
            state.update(update)
            fields_set = fields_set | frozenset(update)
        return _rebuild(type(self), state, fields_set)  # type: ignore[return-value]

    def __setattr__(self, name: str, value: Any) -> None:
        if self._frozen:
            raise TypeError(f"{type(self).__name__} is frozen: {name!r} cannot be set")
        if name not in self.model_fields:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}")
        self.__dict__[name] = value
        if name not in self._fields_set:  # the parsers set fields their records were built with
            _set(self, "_fields_set", self._fields_set | {name})

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__}: fields cannot be deleted")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Model):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def _frozen_hash(self) -> int:
        return hash(tuple(self.__dict__.values()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.__dict__, self._fields_set))

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        yield from self.__dict__.items()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({args})"


def _dump(value: Any, as_json: bool, exclude_none: bool) -> Any:
    if isinstance(value, Model):
        return value.model_dump(mode="json" if as_json else "python",
                                exclude_none=exclude_none)
    if isinstance(value, list) or (as_json and isinstance(value, (tuple, set, frozenset))):
        return [_dump(v, as_json, exclude_none) for v in value]
    if isinstance(value, tuple):
        return tuple(_dump(v, as_json, exclude_none) for v in value)
    if isinstance(value, dict):
        return {k: _dump(v, as_json, exclude_none) for k, v in value.items()}
    if as_json and isinstance(value, Enum):
        return value.value
    return value


_SCALARS: dict[Any, tuple[type, ...]] = {
    str: (str,), int: (int,), float: (int, float), bool: (bool,),
}


def _convert(tp: Any, value: Any, where: str) -> Any:
    """`value` as type `tp`, or RecordError naming `where`."""
    if tp is Any or tp is object:
        return value
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, where)
            except RecordError as exc:
                errors.append(str(exc))
        raise RecordError("; ".join(errors) or f"{where}: {value!r} is not allowed")
    if origin is typing.Literal:
        if value in typing.get_args(tp):
            return value
        raise RecordError(f"{where}: {value!r} is not one of {typing.get_args(tp)}")
    if origin in (list, set, frozenset, tuple):
        if not isinstance(value, (list, tuple)):
            raise RecordError(f"{where}: expected a list, got {type(value).__name__}")
        args = typing.get_args(tp)
        item = args[0] if args else Any
        items = [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return origin(items) if origin is not list else items
    if origin is dict:
        if not isinstance(value, dict):
            raise RecordError(f"{where}: expected an object, got {type(value).__name__}")
        args = typing.get_args(tp)
        item = args[1] if args else Any
        return {k: _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type):
        if issubclass(tp, Model):
            if isinstance(value, tp):
                return value
            if not isinstance(value, dict):
                raise RecordError(f"{where}: expected an object, got {type(value).__name__}")
            hints = tp._field_types()
            state: dict[str, Any] = {}
            for name, spec in tp.model_fields.items():
                if name in value:
                    state[name] = _convert(hints[name], value[name], f"{where}.{name}")
                elif spec.required:
                    raise RecordError(f"{where}.{name}: field required")
            return tp(**state)
        if issubclass(tp, Enum):
            try:
                return tp(value)
            except ValueError:
                raise RecordError(f"{where}: {value!r} is not a {tp.__name__}") from None
        accepted = _SCALARS.get(tp)
        if accepted is not None:
            if isinstance(value, accepted) and (tp is bool or not isinstance(value, bool)):
                return float(value) if tp is float else value  # type: ignore[arg-type]
            raise RecordError(f"{where}: expected {tp.__name__}, got {type(value).__name__}")
        if isinstance(value, tp):
            return value
        raise RecordError(f"{where}: expected {tp.__name__}, got {type(value).__name__}")
    return value


_RANGE_FIELDS = ("start_line", "start_char", "end_line", "end_char")
_ALL_RANGE_FIELDS = frozenset(_RANGE_FIELDS)
"""Shared by every `span`: a frozen Range never changes its set (`model_copy` copies it
first), and one set per range was a fifth of a large plan's memory."""


class Range(Model):
    """A 0-based, end-exclusive span of source text."""

    model_config: ClassVar[dict[str, Any]] = {"frozen": True}

    start_line: int
    start_char: int
    end_line: int
    end_char: int

    @classmethod
    def of_line(cls, line: int, start: int = 0, end: int = 0) -> Range:
        """A span on a single line (fast path: skips validation on the hot path), built as
        `span` builds one, without the second call (the parsers' most frequent record)."""
        r = _new(cls)
        _set(r, "__dict__", {"start_line": line, "start_char": start, "end_line": line,
                             "end_char": end})
        _set(r, "_fields_set", _ALL_RANGE_FIELDS)
        return r

    @classmethod
    def span(cls, start_line: int, start_char: int, end_line: int, end_char: int) -> Range:
        """What `model_construct` builds, without its per-field loop: the parsers make
        thousands of ranges (`tests/model/test_range.py` keeps the two equal)."""
        r = _new(cls)
        _set(r, "__dict__", {"start_line": start_line, "start_char": start_char,
                             "end_line": end_line, "end_char": end_char})
        _set(r, "_fields_set", _ALL_RANGE_FIELDS)
        return r

    def contains_line(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line

    def __str__(self) -> str:
        start = f"{self.start_line + 1}:{self.start_char + 1}"
        return f"{start}-{self.end_line + 1}:{self.end_char + 1}"


ZERO = Range.of_line(0)


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2, Severity.HINT: 3}


class Kind(StrEnum):
    """What a workspace file is, decided from its path."""

    PLAN = "plan"
    AGENT = "agent"
    COMMAND = "command"
    SKILL = "skill"
    """`.claude/skills/<name>/SKILL.md`: front matter like a command's, plus `name`."""
    OPENCODE_AGENT = "opencode-agent"
    """`.opencode/agent(s)/**/*.md`: an OpenCode agent (its own format, not Claude Code's)."""
    OPENCODE_COMMAND = "opencode-command"
    """`.opencode/command(s)/**/*.md`: an OpenCode command template."""
    OPENCODE_CONFIG = "opencode-config"
    """`opencode.json(c)` at the root or in `.opencode/`: OpenCode's project configuration."""
    MCP_CONFIG = "mcp-config"
    """`.mcp.json` at the root: Claude Code's project-scoped MCP servers."""
    PLUGIN_MANIFEST = "plugin-manifest"
    """`.claude-plugin/plugin.json` or `marketplace.json` at the root: a Claude Code plugin's
    manifest or a plugin marketplace's catalog."""
    MEMORY = "memory"
    """`CLAUDE.md` (root, `.claude/`, nested), `CLAUDE.local.md`, `.claude/rules/**/*.md`:
    instruction files Claude Code loads into the session, with their `@path` imports."""
    CONTEXT = "context"
    """`.claude/context/**/*.md`, `.opencode/context/**/*.md`: documents agents, commands and
    skills point to; only their relative links and `@path` references are checked."""
    SETTINGS = "settings"
    """`.claude/settings.json` and `.claude/settings.local.json`: Claude Code's project
    settings (permissions, hooks)."""
    REGISTRY = "registry"
    """`specs/state.json`: the task registry of the newer task-based trees."""
    REPORT = "report"
    SUMMARY = "summary"
    STATE = "state"
    ERRORS_LOG = "errors_log"
    CHECKPOINT = "checkpoint"
    UNLOADED = "unloaded"
    """A file meant for Claude Code where it never looks: a loose `.claude/skills/x.md`, a
    `skill.md`/`claude.md` not spelt in capitals, a link under `.claude/rules/` or to a skill
    folder that dangles or leaves the workspace (`workspace.discovery.unloaded`)."""
    OTHER = "other"


class Convention(StrEnum):
    """Which body of conventions a rule enforces; a rule runs only on files that follow it."""

    CLAUDE_CODE = "claude-code"
    """Claude Code's documented agent, command, skill and settings formats."""
    OPENCODE = "opencode"
    """OpenCode's agent and command formats (`.opencode/agent/`, `.opencode/command/`)."""
    PLAN = "plan"
    """Any markdown plan with numbered phases, checkboxes and status markers."""
    CHECKBOX_PLAN = "checkbox-plan"
    """Plans whose task checkboxes are ticked as the work is done (all but task-based ones)."""
    PLAN_STANDARD = "plan-standard"
    """The seeds' plan metadata standard (spec 010), where the workspace ships it."""
    TASK_PLAN = "task-plan"
    """The newer task-based plans: bullet metadata under the title (`Task`, `Effort`)."""
    WORKFLOW_BASH = "workflow-bash"
    """The seeds' bash-block orchestration: state files, `append_workflow_state`, traps."""
    SCRIPT_BLOCKS = "script-blocks"
    """Commands whose bash blocks are scripts run as written (they call a project library)."""
    MARKDOWN = "markdown"
    """CommonMark, as GitHub and the editor's preview render every markdown file."""
    WORKFLOW_AGENTS = "workflow-agents"
    """The seeds' agent/command orchestration: STEP numbering, `Task {` blocks, injection."""
    TASK_REGISTRY = "task-registry"
    """`specs/state.json` task registries."""
    BATON = "baton"
    """Baton's own configuration, checkpoints, error log and run state."""


CONVENTION_DOCS = {
    Convention.CLAUDE_CODE: "Claude Code's documented formats for agents, commands, skills "
    "and settings (code.claude.com/docs); every agent and command file follows it",
    Convention.OPENCODE: "OpenCode's agent and command formats (its config schema and "
    "loaders, npm `opencode-ai`); every file under `.opencode/agent(s)/` and "
    "`.opencode/command(s)/` follows it",
    Convention.PLAN: "markdown plans with `Phase N` headings, task checkboxes and status "
    "markers, by any author",
    Convention.CHECKBOX_PLAN: "plans whose task checkboxes are ticked as work is done (the "
    "seeds' `/implement` and checkbox utilities); task-based plans track status on the phase "
    "heading only and leave their task lists as written",
    Convention.PLAN_STANDARD: "the seeds' plan metadata standard (spec 010); a plan follows "
    "it when its metadata has a `Standards File` entry and the workspace ships the standard "
    "(.claude/docs/reference/standards/plan-metadata-standard.md)",
    Convention.TASK_PLAN: "the newer task-based plans (bullet metadata directly under the "
    "title) that name their format standard (`- **Standards**: plan-format.md; ...`)",
    Convention.WORKFLOW_BASH: "the seeds' multi-block bash orchestration (state files, "
    "`append_workflow_state`, `${CLAUDE_PROJECT_DIR}` paths); a command follows it when its "
    "bash blocks use the state library",
    Convention.SCRIPT_BLOCKS: "commands whose ```bash blocks are scripts Claude runs as "
    "written: they use the seeds' state library or `source` a library from the project's "
    "`.claude/` tree (`source .claude/lib/…`); elsewhere a bash fence is as often an example, "
    "a template or instructions",
    Convention.WORKFLOW_AGENTS: "the seeds' agent and command orchestration (`Task {` "
    "blocks with subagent_type/prompt, behavioural injection, return signals, STEP numbering, "
    "`dependent-agents`/`command-type` keys); a file follows it when it uses any of them",
    Convention.TASK_REGISTRY: "`specs/state.json` task registries (`active_projects`)",
    Convention.BATON: "Baton's own configuration, checkpoints, errors.jsonl and run state",
    Convention.MARKDOWN: "CommonMark block structure (fences, headings), as GitHub and the "
    "editor's preview render it; every markdown file Baton reads follows it",
}


class TextEdit(Model):
    """Replace `range` in `path` with `new_text`."""

    path: str
    range: Range
    new_text: str


class Fix(Model):
    """An edit computed together with its finding, so code actions never re-run rules."""

    title: str
    edits: list[TextEdit]
    safe: bool = True


class Related(Model):
    """Another location that explains a finding (e.g. the other phases of a cycle)."""

    path: str
    range: Range
    message: str


class Finding(Model):
    """One problem found by one rule, ready to be rendered by any front end."""

    code: str
    rule: str
    severity: Severity
    message: str
    path: str
    range: Range
    related: list[Related] = []
    fix: Fix | None = None
    tags: list[str] = []

    @property
    def url(self) -> str:
        """The rule's documentation page."""
        return rule_docs_url(self.code)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.range.start_line, self.range.start_char, self.code)


class FieldRecord:
    """`__eq__` and `__repr__` over `_FIELDS`, as a `@dataclass` makes them, for records
    written out rather than declared as dataclasses: a dataclass compiles its methods with
    `exec` when its module is imported, which every `baton check` paid for."""

    __slots__ = ()
    _FIELDS: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclasses were

    def __repr__(self) -> str:
        shown = ", ".join(f"{f}={getattr(self, f)!r}" for f in self._FIELDS)
        return f"{type(self).__name__}({shown})"
