"""Text → document model. Parsers never raise: bad input becomes `Unreadable` or a problem."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..model.base import Kind
from .text import DEFAULT_MAX_BYTES, Source, UnreadableError, decode

if TYPE_CHECKING:
    from ..model import Document

log = logging.getLogger(__name__)


def _parsers() -> dict[Kind, Any]:
    """The parser per kind, imported on the first parse: `parse.text` alone (line splitting,
    decoding) is on start-up paths that never parse (a warm check, the server's start)."""
    if not _PARSERS:
        from .agent import parse_agent, parse_command
        from .data import parse_checkpoint_file, parse_errors_log, parse_report, parse_state
        from .plan import parse_plan
        from .registry import parse_registry

        _PARSERS.update({
            Kind.PLAN: parse_plan,
            Kind.AGENT: parse_agent,
            Kind.COMMAND: parse_command,
            Kind.SKILL: parse_command,
            Kind.REGISTRY: parse_registry,
            Kind.STATE: parse_state,
            Kind.ERRORS_LOG: parse_errors_log,
            Kind.CHECKPOINT: parse_checkpoint_file,
            Kind.REPORT: parse_report,
            Kind.SUMMARY: parse_report,
        })
    return _PARSERS


_PARSERS: dict[Kind, Any] = {}


def parse_text(kind: Kind, text: str, path: str = "") -> Document | None:
    """Parse already-decoded text; None for kinds without a parser."""
    parser = _parsers().get(kind)
    if parser is None:
        return None
    try:
        return parser(Source.from_text(text), path)
    except RecursionError:
        from ..model.data import Unreadable

        return Unreadable(path=path, reason="file nests too deeply to parse")
    except Exception as exc:  # a parser bug must never reach the user as a traceback
        log.exception("parser for %s failed on %s", kind, path)
        from ..model.data import Unreadable

        return Unreadable(path=path, reason=f"internal parser error ({type(exc).__name__}: {exc})")


def parse_bytes(kind: Kind, data: bytes, path: str = "",
                max_bytes: int = DEFAULT_MAX_BYTES) -> Document | None:
    try:
        text = decode(data, max_bytes)
    except UnreadableError as exc:
        from ..model.data import Unreadable

        return Unreadable(path=path, reason=str(exc))
    return parse_text(kind, text, path)


__all__ = ["Source", "UnreadableError", "decode", "parse_bytes", "parse_text"]
