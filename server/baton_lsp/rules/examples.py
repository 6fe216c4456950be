"""The examples in a rule's documentation, read back so a test can run them.

Every rule's docstring shows one case it reports and one near miss it must not report, as
indented blocks after a `Reported:` / `Not reported:` line. A block holds one or more files,
each opened by a `==> path <==` line (the paths are relative to a workspace root), so
cross-file rules can show the files they look at. A `==> path -> target <==` line makes `path`
a symbolic link to `target` instead (for rules about links). Running them keeps the docs
honest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_HEAD = re.compile(r"^(Reported|Not reported)(?: \([^)]*\))?:\s*$")
"""`Reported:` or `Not reported:`, optionally saying which case: `Not reported (…):`."""
_FILE = re.compile(r"^==> (\S.*?) <==$")
_LINK = re.compile(r"^(\S.*?) -> (\S.*)$")


@dataclass(frozen=True)
class Example:
    reported: bool
    files: tuple[tuple[str, str], ...]
    """(workspace-relative path, text) in order; the last file is the one checked."""
    links: tuple[tuple[str, str], ...] = ()
    """(workspace-relative path, link target) of the symbolic links to make."""


def examples(doc: str) -> list[Example]:
    """Every `Reported:` / `Not reported:` example of a rule's documentation."""
    lines = doc.splitlines()
    found: list[Example] = []
    i = 0
    while i < len(lines):
        m = _HEAD.match(lines[i])
        i += 1
        if not m:
            continue
        while i < len(lines) and not lines[i].strip():
            i += 1
        block: list[str] = []
        while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
            block.append(lines[i][4:])
            i += 1
        while block and not block[-1].strip():
            block.pop()
        files: list[tuple[str, list[str]]] = []
        links: list[tuple[str, str]] = []
        for line in block:
            fm = _FILE.match(line)
            link = _LINK.match(fm.group(1)) if fm else None
            if link:
                links.append((link.group(1), link.group(2)))
            elif fm:
                files.append((fm.group(1), []))
            elif files:
                files[-1][1].append(line)
        if files:
            found.append(Example(m.group(1) == "Reported",
                                 tuple((p, "\n".join(t) + "\n") for p, t in files),
                                 tuple(links)))
    return found
