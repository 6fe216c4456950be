"""What a return signal is: one definition for the rules (signals an agent or a prompt
documents), the editor (a signal under the cursor) and the engine (signals an agent prints).

A signal is an upper-case snake name with one of the seeds' completion suffixes
(`REPORT_CREATED`, `IMPLEMENTATION_COMPLETE`, `PLAN_REVISED`, `INVOCATION_PLAN_READY`,
`DOCUMENTATION_UPDATED`, …) or one of the generic words every agent may print (`TASK_ERROR`,
`ERROR_CONTEXT`, `PROGRESS`), followed by a colon. Where it may stand differs by reader, so
there are three patterns built from the one name:

- `SIGNAL_RE`: anywhere in a line of a document (`Return: PLAN_CREATED: [path]`).
- `SIGNAL_LINE_RE`: a line an agent prints, the signal first (after an optional list bullet,
  quote mark or bold): the engine reads values from these.
- `RETURN_SIGNAL_RE`: a prompt asking for a signal by any name after `Return`/`Emit`/`signal`
  (`Return completion signal: REVISION_COMPLETED: <path>`): a name a prompt asks for need not
  follow the suffixes to be a contract the agent has to document.
"""

from __future__ import annotations

import re

from ..lazy_pattern import LazyPattern

SIGNAL_SUFFIXES = ("CREATED", "COMPLETE", "REVISED", "GENERATED", "READY", "FAILED", "UPDATED")
"""The completion suffixes: `DOCUMENTATION_UPDATED: [files]` is seed 000's document agent."""
SIGNAL_WORDS = ("TASK_ERROR", "ERROR_CONTEXT", "PROGRESS", "COMMIT_MESSAGE")
"""Signals that are whole words rather than `<SUBJECT>_<SUFFIX>`."""

SIGNAL_WORD_ALONE = "PROGRESS:"
"""The one signal, as `SIGNAL_RE` matches it, whose name holds no `_`: a line holding
neither holds no signal (`tests/parse/test_signals.py` keeps the two in step)."""

SIGNAL_NAME = (rf"(?:[A-Z][A-Z0-9]*_)+(?:{'|'.join(SIGNAL_SUFFIXES)})"
               rf"|{'|'.join(SIGNAL_WORDS)}")
"""A signal's name (a regular-expression alternative, no group of its own)."""

SIGNAL_RE = re.compile(rf"\b({SIGNAL_NAME}):")
"""A signal anywhere in a document line; group 1 is its name."""

SIGNAL_LINE_RE = LazyPattern(
    rf"^\s*(?:[-*>]\s*)?(?:\*\*)?({SIGNAL_NAME})(?:\*\*)?:\s?(.*)$")
"""A line an agent prints that is a signal; group 1 the name, group 2 the value."""

RETURN_SIGNAL_RE = re.compile(
    r"\b(?:[Rr]eturn|RETURN|[Ee]mit|[Ss]ignal)\b[^:\n]{0,40}:\s*[`*]*"
    r"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+):")
"""A signal a prompt asks for after `Return`/`Emit`/`signal`, by any upper-case snake name."""
