"""Text → document model. Parsers never raise: bad input becomes `Unreadable` or a problem."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, cast

from ..lazylog import LazyLogger
from ..model.base import Kind
from .text import DEFAULT_MAX_BYTES, Source, UnreadableError, decode

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..model import Document

    Parser = Callable[[Source, str], Document]

log = LazyLogger(__name__)  # not `logging`: a check that logs nothing never loads it


_PARSER_OF = {
    Kind.PLAN: ("plan", "parse_plan"),
    Kind.AGENT: ("agent", "parse_agent"),
    Kind.COMMAND: ("agent", "parse_command"),
    Kind.SKILL: ("agent", "parse_command"),
    Kind.OPENCODE_AGENT: ("opencode", "parse_opencode_agent"),
    Kind.OPENCODE_COMMAND: ("opencode", "parse_opencode_command"),
    Kind.OPENCODE_CONFIG: ("opencode", "parse_opencode_config"),
    Kind.MCP_CONFIG: ("claude_files", "parse_json_file"),
    Kind.PLUGIN_MANIFEST: ("claude_files", "parse_json_file"),
    Kind.MEMORY: ("claude_files", "parse_memory"),
    Kind.CONTEXT: ("claude_files", "parse_context"),
    Kind.SETTINGS: ("settings", "parse_settings"),
    Kind.REGISTRY: ("registry", "parse_registry"),
    Kind.STATE: ("data", "parse_state"),
    Kind.ERRORS_LOG: ("data", "parse_errors_log"),
    Kind.CHECKPOINT: ("data", "parse_checkpoint_file"),
    Kind.REPORT: ("data", "parse_report"),
    Kind.SUMMARY: ("data", "parse_report"),
    Kind.UNLOADED: ("agent", "parse_command"),
}
"""Kind → (module, function) of its parser, imported when a file of that kind is first
parsed: `parse.text` alone (line splitting, decoding) is on start-up paths that never parse
(a warm check, the server's start), and the first document parses with its own parser only."""


def parser_for(kind: Kind) -> Parser | None:
    """The parser of `kind` (None for kinds without one), importing its module."""
    where = _PARSER_OF.get(kind)
    if where is None:
        return None
    # cast: `_PARSER_OF` names only parser functions, looked up by name to import lazily.
    return cast("Parser", getattr(importlib.import_module(f"{__name__}.{where[0]}"), where[1]))


def _parsers() -> dict[Kind, Parser | None]:
    """Every parser, by kind (tests and tools that want them all)."""
    return {kind: parser_for(kind) for kind in _PARSER_OF}


def parse_text(kind: Kind, text: str, path: str = "", *,
               decoded: bool = False) -> Document | None:
    """Parse already-decoded text; None for kinds without a parser. `decoded`: `text` is
    what `decode` returned (see `Source.from_text`)."""
    parser = parser_for(kind)
    if parser is None:
        return None
    try:
        return parser(Source.from_text(text, decoded=decoded), path)
    except RecursionError:
        from ..model.data import Unreadable  # lazy (pydantic): only a parse that failed

        return Unreadable(path=path, reason="file nests too deeply to parse")
    except Exception as exc:  # a parser bug must never reach the user as a traceback
        log.exception("parser for %s failed on %s", kind, path)
        from ..model.data import Unreadable  # lazy (pydantic): only a parse that failed

        return Unreadable(path=path, reason=f"internal parser error ({type(exc).__name__}: {exc})")


def parse_bytes(kind: Kind, data: bytes, path: str = "",
                max_bytes: int = DEFAULT_MAX_BYTES) -> Document | None:
    try:
        text = decode(data, max_bytes)
    except UnreadableError as exc:
        from ..model.data import Unreadable  # lazy (pydantic): only an unreadable file

        return Unreadable(path=path, reason=str(exc))
    return parse_text(kind, text, path, decoded=True)


__all__ = ["Source", "UnreadableError", "decode", "parse_bytes", "parse_text"]
