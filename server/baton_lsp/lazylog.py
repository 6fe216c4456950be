"""A logger for the modules on a check's path, which must not import `logging`: with
`traceback`, `threading`, `string` and `weakref` it is a tenth of a replayed check's time,
and a few milliseconds of every cold check, which logs nothing unless something goes wrong."""

from __future__ import annotations

import sys
from collections.abc import Callable

_pending: list[Callable[[], None]] = []
"""The CLI's logging set-up, deferred (`configure_on_first_record`): at most one."""


def configure_on_first_record(configure: Callable[[], None]) -> None:
    """Run `configure` (which imports `logging` and installs a handler) just before the
    first record any `LazyLogger` emits, or at `configure_now`; never if nothing is logged."""
    _pending[:] = [configure]


def configure_now() -> None:
    """Run the deferred set-up if it has not run: for code about to use `logging` itself
    (the parallel check hands the root's level and format to its workers)."""
    while _pending:
        _pending.pop()()


def _enabled() -> bool:
    """Whether a record below WARNING could be shown: only once `logging` is loaded, as
    before that nothing can have configured a handler or lowered the root's default level
    (WARNING). A deferred set-up counts: `-v` configures at once, not here."""
    return "logging" in sys.modules


class LazyLogger:
    """`logging.getLogger(name)`, looked up when a record is emitted."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def debug(self, msg: str, *args: object) -> None:
        """Dropped unseen while `logging` was never imported (see `_enabled`)."""
        if _enabled():
            import logging  # already loaded: this binds the name, it costs nothing

            logging.getLogger(self.name).debug(msg, *args, stacklevel=2)

    def info(self, msg: str, *args: object) -> None:
        """Dropped unseen while `logging` was never imported (see `_enabled`)."""
        if _enabled():
            import logging  # already loaded: this binds the name, it costs nothing

            logging.getLogger(self.name).info(msg, *args, stacklevel=2)

    def warning(self, msg: str, *args: object) -> None:
        configure_now()
        import logging  # lazy: a check that warns of nothing never pays for `logging`

        logging.getLogger(self.name).warning(msg, *args, stacklevel=2)

    def exception(self, msg: str, *args: object) -> None:
        """An ERROR record with the exception being handled, as `Logger.exception`."""
        configure_now()
        import logging  # lazy: only a failing parser or rule logs this

        logging.getLogger(self.name).exception(msg, *args, stacklevel=2)
