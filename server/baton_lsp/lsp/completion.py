"""Completion: dependency ids, status markers, metadata keys, agents, tools, front matter."""

from __future__ import annotations

import re
from collections.abc import Callable

from lsprotocol import types

from .convert import from_lsp_position
from .server import BatonServer, guard, uri_path

_DEP_RE = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*Dependencies\*\*:?|dependencies:|depends_on:)"
                     r"\s*\[[^\]]*$", re.IGNORECASE)
_DEPENDS_ON_RE = re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?Depends\s+on(?::\*\*|\*\*\s*:|\s*:)"
                            r"\s*(?:[\w.]+\s*,\s*)*[\w.]*$", re.IGNORECASE)
"""`**Depends on**: 1, ` — the task-based plans' list, written without brackets."""
_STATUS_RE = re.compile(r"^#{1,3}\s+Phase\s+\w[\w.]*.*\[[A-Za-z ]*$", re.IGNORECASE)
"""A heading's marker being typed: `### Phase 2A: Title [`, `### Phase 1.10: Title [IN`."""
_META_KEY_RE = re.compile(r"^\s*[-*]\s+\*\*[^*]*$")
_INJECT_RE = re.compile(r"Read and follow.*\.claude/agents/[\w.-]*$", re.IGNORECASE)
_FM_KEY_RE = re.compile(r"^[A-Za-z-]*$")
_FM_VALUE_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)\s*:\s*(.*)$")
_LIST_ITEM_RE = re.compile(r"^\s+-\s*[\w.-]*$")

PLAN_KEYS_EXTRA = ("Scope", "Estimated Phases", "Complexity Score", "Structure Level",
                   "Expanded Phases")
AGENT_KEYS = ("name", "description", "allowed-tools", "tools", "model", "model-justification",
              "fallback-model", "dependent-agents")


def _items(labels: list[tuple[str, str | None]], kind: types.CompletionItemKind,
           insert: str = "{}") -> list[types.CompletionItem]:
    return [types.CompletionItem(label=label, kind=kind, detail=detail,
                                 insert_text=insert.format(label), sort_text=f"{i:04d}")
            for i, (label, detail) in enumerate(labels)]


def _frontmatter_end(lines: list[str]) -> int:
    if not lines or lines[0].strip() != "---":
        return -1
    for i in range(1, min(len(lines), 2000)):
        if lines[i].strip() in ("---", "..."):
            return i
    return -1


def complete(ls: BatonServer, path: str, line: int, char: int) -> list[types.CompletionItem]:
    # the core loads on first use
    from ..model.base import Kind
    from ..model.config import DEFAULT_REQUIRED_METADATA
    from ..model.plan import KNOWN_STATUSES, Plan
    from ..rules.agent_frontmatter import KNOWN_TOOLS, MODEL_SUGGESTIONS
    from ..rules.command_frontmatter import COMMAND_TYPES
    from ..rules.command_frontmatter import KNOWN_KEYS as COMMAND_KEYS

    plan_keys = (*DEFAULT_REQUIRED_METADATA, *PLAN_KEYS_EXTRA)
    idx = ls.session.index_for(path)
    kind = idx.kind_of(path)
    lines = ls.session.lines_of(path)
    prefix = lines[line][:char] if line < len(lines) else ""
    doc = idx.document(path)
    if kind is Kind.PLAN and isinstance(doc, Plan):
        if _DEP_RE.match(prefix) or _DEPENDS_ON_RE.match(prefix):
            own = next((p.id for p in doc.phases
                        if p.range.start_line <= line <= p.range.end_line), None)
            return _items([(p.id, f"Phase {p.number}: {p.title}") for p in doc.phases
                           if p.id != own], types.CompletionItemKind.Reference)
        if _STATUS_RE.match(prefix):
            return _items([(s, None) for s in KNOWN_STATUSES], types.CompletionItemKind.EnumMember)
        if _META_KEY_RE.match(prefix):
            present = {m.key.lower() for m in doc.metadata}
            return _items([(k, "plan metadata") for k in plan_keys if k.lower() not in present],
                          types.CompletionItemKind.Property)
        return []
    if _INJECT_RE.search(prefix):
        return _items([(name, "agent") for name in sorted(idx.agent_paths())],
                      types.CompletionItemKind.File, "{}.md")
    fm_end = _frontmatter_end(lines)
    if kind in (Kind.OPENCODE_AGENT, Kind.OPENCODE_COMMAND) and 0 < line < fm_end:
        return _opencode(idx.opencode_agents, kind is Kind.OPENCODE_AGENT, lines, line, prefix,
                         fm_end)
    if kind in (Kind.AGENT, Kind.COMMAND) and 0 < line < (fm_end if fm_end > 0 else 0):
        keys = COMMAND_KEYS if kind is Kind.COMMAND else AGENT_KEYS
        if _FM_KEY_RE.match(prefix):
            present = {ln.split(":", 1)[0].strip() for ln in lines[1:fm_end] if ":" in ln}
            return _items([(k, None) for k in keys if k not in present],
                          types.CompletionItemKind.Property, "{}: ")
        owner = next((i for i in range(line, 0, -1)
                      if lines[i].strip() and not lines[i][:1].isspace()), None)
        m = _FM_VALUE_RE.match(lines[owner]) if owner is not None else None
        key = m.group(1) if m else ""
        if key in ("allowed-tools", "tools"):
            return _items([(t, "Claude Code tool") for t in KNOWN_TOOLS],
                          types.CompletionItemKind.EnumMember)
        if key in ("model", "fallback-model"):
            return _items([(mdl, None) for mdl in MODEL_SUGGESTIONS],
                          types.CompletionItemKind.EnumMember)
        if key == "command-type":
            return _items([(t, None) for t in COMMAND_TYPES], types.CompletionItemKind.EnumMember)
        if key == "dependent-agents" and (_LIST_ITEM_RE.match(prefix) or owner == line):
            return _items([(n, "agent") for n in sorted(idx.agent_paths())],
                          types.CompletionItemKind.Reference)
    return []


_NESTED_KEY_RE = re.compile(r"^\s+[A-Za-z_-]*$")


def _opencode(agents: Callable[[], dict[str, str]], agent: bool, lines: list[str], line: int,
              prefix: str, fm_end: int) -> list[types.CompletionItem]:
    """OpenCode's own keys and values (model/opencode.py), never Claude Code's."""
    # the core loads on first use
    from ..model.opencode import (
        AGENT_KEYS,
        BUILTIN_AGENTS,
        BUILTIN_TOOLS,
        COMMAND_KEYS,
        MODES,
        PERMISSION_KEYS,
    )

    keys = AGENT_KEYS if agent else COMMAND_KEYS
    owner = next((i for i in range(line - 1 if _NESTED_KEY_RE.match(prefix) else line, 0, -1)
                  if lines[i].strip() and not lines[i][:1].isspace()), None)
    m = _FM_VALUE_RE.match(lines[owner]) if owner is not None else None
    key = m.group(1) if m else ""
    if _NESTED_KEY_RE.match(prefix) and agent and key in ("tools", "permission"):
        names = BUILTIN_TOOLS if key == "tools" else PERMISSION_KEYS
        return _items([(t, "OpenCode tool") for t in names],
                      types.CompletionItemKind.EnumMember, "{}: ")
    if _FM_KEY_RE.match(prefix):
        present = {ln.split(":", 1)[0].strip() for ln in lines[1:fm_end] if ":" in ln}
        return _items([(k, d) for k, d in keys.items() if k not in present],
                      types.CompletionItemKind.Property, "{}: ")
    if owner == line and key == "mode" and agent:
        return _items([(v, None) for v in MODES], types.CompletionItemKind.EnumMember)
    if owner == line and key == "agent" and not agent:
        return _items([(n, "agent") for n in sorted({*agents(), *BUILTIN_AGENTS})],
                      types.CompletionItemKind.Reference)
    return []


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_COMPLETION,
                    types.CompletionOptions(trigger_characters=["[", ",", " ", "*", "/", "-"]))
    @guard(None)
    def completion(ls: BatonServer, params: types.CompletionParams) -> types.CompletionList:
        path = uri_path(params.text_document.uri)
        if path is None:
            return types.CompletionList(is_incomplete=False, items=[])
        lines = ls.session.lines_of(path)
        line, char = from_lsp_position(params.position, lines)
        return types.CompletionList(is_incomplete=False, items=complete(ls, path, line, char))
