"""The BTN31x/BTN32x patterns that must start at a line start or after a separator say so
with one negative look-behind, `(?<![^S])`, not `(?:^|(?<=[S]))`: the same positions (the
start of the string has no character before it, any other has one in S), and one test at
every character of a line instead of a branch of two."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.lazy_pattern import LazyPattern
from baton_lsp.rules import command_bash, command_paths

_LOOK_BEHIND = re.compile(r"\(\?<!\[\^([^\]]*)\]\)")


def _patterns() -> list[re.Pattern[str]]:
    found: list[re.Pattern[str]] = []
    for module in (command_bash, command_paths):
        for value in vars(module).values():
            if isinstance(value, LazyPattern):
                value = re.compile(value.pattern, value.flags)
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str) \
                    and _LOOK_BEHIND.search(value.pattern):
                found.append(value)
    return found


def test_no_rule_pattern_starts_with_the_two_way_branch() -> None:
    """Old code: ten patterns began `(?:^|(?<=[...]))`."""
    for module in (command_bash, command_paths):
        for name, value in vars(module).items():
            pattern = getattr(value, "pattern", None)
            assert not (isinstance(pattern, str) and "(?:^|(?<=[" in pattern), name
    assert len(_patterns()) >= 10


_texts = st.lists(st.sampled_from([
    "source ", ". ", "read x", "for i in a", "export A=1", "append_workflow_state ", "eval ",
    "load_workflow_state ", "init_workflow_state '", "bash .claude/x.sh", "then ", "do ", "!",
    " ", "\t", ";", "&", "|", "(", "`", "{", "x", "-", "\n", "\u00a0", "A=b", "\"", "'",
    "sm_init ", "sm_transition ", "$(", "exec ",
]), max_size=10).map("".join)


@settings(max_examples=1500, deadline=None)
@given(_texts)
def test_the_look_behind_finds_what_the_branch_found(text: str) -> None:
    for pattern in _patterns():
        old = re.compile(_LOOK_BEHIND.sub(lambda m: f"(?:^|(?<=[{m.group(1)}]))",
                                          pattern.pattern), pattern.flags)
        assert [(m.span(), m.groups()) for m in pattern.finditer(text)] == \
            [(m.span(), m.groups()) for m in old.finditer(text)], (pattern.pattern, text)
