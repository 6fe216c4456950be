"""Symbol summaries: what a workspace symbol search needs from a parsed document.

The index computes them whenever it parses a plan, agent or command and keeps them after
the document itself is evicted from its cache (a few hundred bytes per file against tens
of kilobytes of parsed model), so a search over a large workspace does not re-parse it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..model.agent import AgentFile, CommandFile
from ..model.base import Range
from ..model.opencode import OpenCodeAgent, OpenCodeCommand
from ..model.plan import Plan
from ..parse.text import split_lines

SymbolKind = Literal["plan", "phase", "agent", "command"]


@dataclass(frozen=True, slots=True)
class SymbolSummary:
    name: str
    kind: SymbolKind
    range: Range
    """The title or heading, in code points on a single line."""
    container: str | None = None
    line_text: str | None = None
    """The text of the symbol's line when it is not ASCII (for UTF-16 columns), else None."""


def summarize(doc: Any, text: str | None, fallback_title: str) -> tuple[SymbolSummary, ...]:
    """Symbols of a parsed plan, agent or command; `text` is what was parsed (None if not
    at hand: non-ASCII lines are then not recorded). Anything else has none."""
    entries: list[tuple[str, SymbolKind, Range, str | None]] = []
    if isinstance(doc, Plan):
        entries.append((doc.title or fallback_title, "plan", doc.title_range or Range.of_line(0),
                        None))
        entries.extend((f"Phase {p.number}: {p.title}", "phase", p.heading_range, doc.title)
                       for p in doc.phases)
    elif isinstance(doc, OpenCodeAgent):  # by the name OpenCode gives it
        entries.append((doc.agent_name or doc.name, "agent", Range.of_line(0), "opencode agent"))
    elif isinstance(doc, OpenCodeCommand):
        entries.append((f"/{doc.command_name or doc.name}", "command", Range.of_line(0),
                        "opencode command"))
    elif isinstance(doc, AgentFile):
        entries.append((doc.name, "agent", Range.of_line(0), "agent"))
    elif isinstance(doc, CommandFile):
        entries.append((f"/{doc.name}", "command", Range.of_line(0), "command"))
    if not entries:
        return ()
    lines = split_lines(text) if text is not None and not text.isascii() else None
    out = []
    for name, kind, rng, container in entries:
        line = None
        if lines is not None and 0 <= rng.start_line < len(lines):
            line = lines[rng.start_line]
            if line.isascii():
                line = None
        if rng.end_line != rng.start_line:  # not expected for titles and headings
            rng = Range.of_line(rng.start_line, rng.start_char, rng.start_char)
        out.append(SymbolSummary(name or "(untitled)", kind, rng, container, line))
    return tuple(out)
