"""Regular expressions compiled on first use.

A module's patterns were compiled when it was imported, and a check imports every parser and
the rule modules of each kind of file it meets, yet many patterns serve cases a check may
never meet (HTML blocks other than a comment, hooks, the ShellCheck gate with ShellCheck off,
rare shell forms). A `LazyPattern` stands where the compiled pattern stood and compiles it the
first time it is used. It sits in the bottom layer so that the parsers can use it too.
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

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize
                  ) -> re.Match[str] | None:
        return self.compiled.fullmatch(string, pos, endpos)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[object]:
        return self.compiled.findall(string, pos, endpos)

    def split(self, string: str, maxsplit: int = 0) -> list[str | object]:
        return self.compiled.split(string, maxsplit)
