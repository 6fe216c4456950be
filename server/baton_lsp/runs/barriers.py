"""What a hard barrier found, in words, by the barrier's failure kind (`error` in its
context). Its own module so the editor's run-state rule can name a failure without importing
the run records (and pydantic with them) on the check path."""

from __future__ import annotations

BARRIER_FOUND = {
    "missing": "nothing at that path",
    "empty": "an empty file (0 bytes)",
    "elsewhere": "no file there; the agent wrote {reported} instead",
    "outside": "the path resolves outside the workspace",
    "not-a-file": "something that is not a regular file",
}
