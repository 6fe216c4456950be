"""A logger for the modules on a warm check's path, which must not import `logging`: with
`traceback`, `threading`, `string` and `weakref` it is a tenth of a replayed check's time."""

from __future__ import annotations

import sys


class LazyLogger:
    """`logging.getLogger(name)`, looked up when a record is emitted."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def info(self, msg: str, *args: object) -> None:
        """Dropped unseen while `logging` was never imported: then nothing has configured a
        handler or lowered the root's default level (WARNING), so `logging` would drop it."""
        if "logging" in sys.modules:
            import logging  # already loaded: this binds the name, it costs nothing

            logging.getLogger(self.name).info(msg, *args, stacklevel=2)

    def warning(self, msg: str, *args: object) -> None:
        import logging  # lazy: a replayed check never warns, and never pays for `logging`

        logging.getLogger(self.name).warning(msg, *args, stacklevel=2)
