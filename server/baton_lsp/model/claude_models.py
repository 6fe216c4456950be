"""Claude model names the way Claude Code and the Anthropic API accept them.

One definition for the front-matter rule (BTN207), completion, preflight and the claude
runner: aliases resolve inside Claude Code, full ids go to the API as they are, and the
short versioned form many trees write (`sonnet-4.5`) is neither, so it is mapped to the full
id (`claude-sonnet-4-5`) before launch and flagged with that fix in the editor.
"""

from __future__ import annotations

import re

ALIASES = ("default", "best", "sonnet", "opus", "haiku", "opusplan", "sonnet[1m]", "opus[1m]")
"""`claude --model` aliases (Claude Code's model configuration)."""
INHERIT = "inherit"
"""Agent front matter only: use the main session's model (no `--model` is passed)."""
SUGGESTIONS = (INHERIT, "sonnet", "opus", "haiku", "claude-sonnet-4-5", "claude-opus-4-1",
               "claude-haiku-4-5")

_SHORT = re.compile(r"^(?P<family>haiku|sonnet|opus)-(?P<major>\d+)(?:[.-](?P<minor>\d+))?$")
_FULL = re.compile(
    r"^(?:(?:[a-z]{2,4}\.)?anthropic\.)?claude-"
    r"(?:(?P<pre>\d+(?:[-.]\d+)?)-)?(?:haiku|sonnet|opus)"
    r"(?:-(?P<post>\d+(?:[-.]\d+)?))?"
    r"(?:-(?:\d{8}|latest))?(?:@\d{8})?(?:-v\d+(?::\d+)?)?(?:\[1m\])?$"
)


def looks_like_claude_model(name: str) -> bool:
    """A Claude model in any spelling (alias, full or provider id, `sonnet-4.5`): what the
    codex and gemini runners must never be given."""
    lowered = name.strip().lower()
    head = re.split(r"[-_.\[\s]", lowered, maxsplit=1)[0]
    return (head in ("claude", "sonnet", "opus", "haiku", "opusplan")
            or bool(_FULL.match(lowered)) or bool(_SHORT.match(lowered)))


def full_id(name: str) -> str | None:
    """`sonnet-4.5` → `claude-sonnet-4-5`, `opus-4` → `claude-opus-4-0`; None otherwise."""
    m = _SHORT.match(name)
    if not m:
        return None
    minor = m.group("minor") or ("0" if m.group("major") == "4" else None)
    version = m.group("major") + (f"-{minor}" if minor is not None else "")
    return f"claude-{m.group('family')}-{version}"


def is_claude_model(name: str, extra: tuple[str, ...] | list[str] = ()) -> bool:
    """True for what Claude Code passes on correctly: `inherit`, an alias, a full id."""
    if name == INHERIT or name in ALIASES or name in extra:
        return True
    m = _FULL.match(name)
    return bool(m and (m.group("pre") or m.group("post")))


def claude_model_arg(name: str | None, extra: tuple[str, ...] | list[str] = ()) -> str | None:
    """The `--model` value for a front-matter model: None for none or `inherit`.

    Raises ValueError naming the fix for a name that is not a Claude model.
    """
    if not name or name == INHERIT:
        return None
    if is_claude_model(name, extra):
        return name
    mapped = full_id(name)
    if mapped is not None:
        return mapped
    raise ValueError(f"`{name}` is not a Claude model: use an alias ({', '.join(ALIASES[2:5])})"
                     f" or a full id such as `claude-sonnet-4-5`")
