"""What is under the cursor: the element lookup shared by hover, definition and references."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.agent import AgentFile, CommandFile
from ..model.base import Kind, Range
from ..model.common import Frontmatter, Link
from ..model.opencode import OpenCodeAgent, OpenCodeCommand
from ..model.plan import DependencyRef, Phase, Plan
from ..parse.signals import SIGNAL_RE
from ..rules.base import RuleContext
from ..rules.opencode_refs import SUBAGENT_RE
from ..workspace.index import WorkspaceIndex
from .convert import from_lsp_position
from .server import uri_path

_CODE_RE = re.compile(r"\bBTN\d{3}\b")


@dataclass
class Element:
    kind: str
    """dep | phase | agent | link | rule | signal | status | oc-key | oc-agent"""
    range: Range
    value: Any = None
    phase: Phase | None = None
    ref: DependencyRef | None = None


def _inside(r: Range, line: int, char: int) -> bool:
    return (r.start_line, r.start_char) <= (line, char) <= (r.end_line, r.end_char)


def _word(lines: list[str], line: int, char: int, rx: re.Pattern[str]) -> Element | None:
    text = lines[line] if 0 <= line < len(lines) else ""
    for m in rx.finditer(text):
        if m.start() <= char <= m.end():
            return Element("rule" if rx is _CODE_RE else "signal",
                           Range.of_line(line, m.start(), m.end()),
                           m.group(1) if rx is SIGNAL_RE else m.group(0))
    return None


def _agent_items(fm: Frontmatter | None) -> list[tuple[str, Range]]:
    if fm is None:
        return []
    entry = fm.get("dependent-agents")
    if entry is None:
        return []
    if entry.items:
        return [(str(i.value), i.range) for i in entry.items]
    if isinstance(entry.value, str):
        return [(entry.value.strip(), entry.value_range)]
    return []


def element_at(doc: Any, lines: list[str], line: int, char: int) -> Element | None:
    if isinstance(doc, Plan):
        for phase in doc.phases:
            if phase.dependencies is not None:
                for ref in phase.dependencies.refs:
                    if _inside(ref.range, line, char):
                        return Element("dep", ref.range, ref.id, phase, ref)
            if phase.status is not None and _inside(phase.status.range, line, char):
                return Element("status", phase.status.range, phase.status.text, phase)
            if phase.heading_range.start_line == line:
                return Element("phase", phase.heading_range, phase.id, phase)
            if phase.expanded_link is not None and _inside(phase.expanded_link.target_range,
                                                           line, char):
                return Element("link", phase.expanded_link.target_range, phase.expanded_link)
        for meta in doc.metadata:
            if meta.key.lower() in ("parent plan", "parent phase") and \
                    _inside(meta.value_range, line, char):
                return Element("link", meta.value_range, meta)
    if isinstance(doc, (OpenCodeAgent, OpenCodeCommand)) and doc.frontmatter is not None:
        for entry in doc.frontmatter.entries:  # OpenCode's keys, a command's agent
            if _inside(entry.key_range, line, char):
                return Element("oc-key", entry.key_range, entry.key)
            if isinstance(doc, OpenCodeCommand) and entry.key == "agent" \
                    and isinstance(entry.value, str) and _inside(entry.value_range, line, char):
                return Element("oc-agent", entry.value_range, entry.value.strip())
    if isinstance(doc, (OpenCodeAgent, OpenCodeCommand)) and 0 <= line < len(lines) \
            and "subagent_type" in lines[line]:
        for m in SUBAGENT_RE.finditer(lines[line]):  # a task-tool call's agent
            if m.start(2) <= char <= m.end(2):
                return Element("oc-agent", Range.of_line(line, m.start(2), m.end(2)), m.group(2))
    if isinstance(doc, (AgentFile, CommandFile)):
        for inj in doc.injections:
            if _inside(inj.target_range, line, char) and inj.agent_name:
                return Element("agent", inj.target_range, inj.agent_name)
        for name, rng in _agent_items(doc.frontmatter):
            if _inside(rng, line, char):
                return Element("agent", rng, name)
    for link in getattr(doc, "links", []) or []:
        if _inside(link.target_range, line, char):
            return Element("link", link.target_range, link)
    return _word(lines, line, char, _CODE_RE) or _word(lines, line, char, SIGNAL_RE)


def link_target(idx: WorkspaceIndex, path: str, value: Any) -> Path | None:
    """Resolve a link (or a Parent Plan metadata entry) the way the link rules do."""
    ctx = RuleContext(path=path, kind=idx.kind_of(path) or Kind.PLAN, root=idx.root)
    if isinstance(value, Link):
        return ctx.resolve(value.target)
    text = getattr(value, "value", "")
    m = re.search(r"\]\(([^)\s]+)\)", text)
    target = m.group(1) if m else text.strip().split(" ")[0]
    if not target:
        return None
    if not target.endswith(".md") and "/" not in target:
        target += ".md"
    here = Path(path).parent
    for cand in (ctx.resolve(target), here.parent / target):
        if cand is not None and os.path.exists(cand):  # no OSError on a name too long
            return cand
    return ctx.resolve(target)


@dataclass
class Cursor:
    """Everything a position request needs about its document, computed once."""

    path: str
    index: WorkspaceIndex
    doc: Any
    lines: list[str]
    element: Element | None


def cursor_at(ls: Any, uri: str, position: Any) -> Cursor | None:
    """Resolve `uri` + LSP `position` to the document and the element under the cursor."""
    path = uri_path(uri)
    if path is None:
        return None
    idx = ls.session.index_for(path)
    doc = idx.document(path)
    lines = ls.session.lines_of(path)
    line, char = from_lsp_position(position, lines)
    return Cursor(path, idx, doc, lines, element_at(doc, lines, line, char))
