"""The CLI's logging set-up: apart from `main`, so that a replayed check, which logs
nothing, never imports `logging`."""

from __future__ import annotations

import logging
import sys

from ..terminal import terminal_safe


class BriefFormatter(logging.Formatter):
    """One line per record: an exception is named (`: RecursionError: …`), its traceback is
    printed only with `-v`. A rule that fails on a hostile file is already a BTN000 finding;
    its 3,000-line traceback on stderr helped nobody."""

    def __init__(self, fmt: str, tracebacks: bool = False) -> None:
        super().__init__(fmt)
        self.tracebacks = tracebacks

    def format(self, record: logging.LogRecord) -> str:
        """The record made terminal-safe: log messages quote paths and file content."""
        if self.tracebacks or not (record.exc_info or record.exc_text or record.stack_info):
            return terminal_safe(super().format(record), multiline=True)
        exc = record.exc_info[1] if record.exc_info else None
        brief = logging.makeLogRecord({**record.__dict__, "exc_info": None, "exc_text": None,
                                       "stack_info": None})
        line = super().format(brief)
        if exc is not None:
            text = str(exc).splitlines()[0] if str(exc) else ""
            line += f": {type(exc).__name__}" + (f": {text}" if text else "")
        return terminal_safe(line, multiline=True)


def configure_logging(verbose: bool) -> None:
    """One brief line per record on stderr: INFO and up with `-v`, else WARNING and up.
    Idempotent (`basicConfig` leaves a configured root alone)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(BriefFormatter("baton: %(levelname)s: %(message)s",
                                        tracebacks=verbose))
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        handlers=[handler])
