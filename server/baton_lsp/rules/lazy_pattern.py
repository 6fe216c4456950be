"""Regular expressions compiled on first use.

A rule module's patterns were compiled when it was imported, and a check imports the modules
of every kind of file it meets: the settings and hook rules are loaded for every agent and
skill (any of them may declare `hooks:`), the ShellCheck gate for every command, yet most
checks never run their patterns (no hooks; ShellCheck off). A `LazyPattern` stands where the
compiled pattern stood and compiles it the first time it is used.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator


class LazyPattern:
    """`re.compile(pattern, flags)`, done on the first `search`, `match`, `finditer` or
    `sub` (two threads may both compile it: the same pattern either way)."""

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    @property
    def is_compiled(self) -> bool:
        return self._compiled is not None

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize
               ) -> re.Match[str] | None:
        return self.compiled.search(string, pos, endpos)

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize
              ) -> re.Match[str] | None:
        return self.compiled.match(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize
                 ) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str,
            count: int = 0) -> str:
        return self.compiled.sub(repl, string, count)
