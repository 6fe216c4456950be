"""Claude Code deny rules against artifact paths (issue 30, defect 8): every path form and
glob of the permission rules, as the real claude 2.1.331 applies them (the same cases run
through the binary in tests/agents/test_claude_cli.py)."""

from __future__ import annotations

from pathlib import PurePosixPath as P

import pytest

from baton_lsp.model.claude_permissions import (
    Roots,
    SettingsScope,
    covers,
    parse_deny,
)

HOME = P("/home/dev")
WS = HOME / "ws"
ROOTS = Roots(cwd=WS, home=HOME, config_dir=HOME / ".claude")
REPORT = WS / "specs/001_auth/reports/001_auth.md"
USER, PROJECT, LOCAL, MANAGED = (SettingsScope.USER, SettingsScope.PROJECT,
                                 SettingsScope.LOCAL, SettingsScope.MANAGED)


def denies(rule: str, scope: SettingsScope = USER, path: P = REPORT,
           roots: Roots = ROOTS) -> bool:
    parsed = parse_deny(rule)
    return parsed is not None and covers(parsed, scope, roots, path)


@pytest.mark.parametrize(("rule", "scope", "expected"), [
    # `//` starts at the filesystem root
    ("Edit(//home/dev/ws/specs/**)", USER, True),
    ("Edit(//home/dev/other/**)", USER, False),
    # `~/` at the home directory
    ("Edit(~/ws/specs/**)", USER, True),
    ("Edit(~/specs/**)", USER, False),
    # `/` at the settings' own root: the project for project, local and managed settings,
    # the configuration directory (~/.claude) for user settings
    ("Edit(/specs/**)", PROJECT, True),
    ("Edit(/specs/**)", LOCAL, True),
    ("Edit(/specs/**)", MANAGED, True),
    ("Edit(/specs/**)", USER, False),
    ("Edit(/ws/specs/**)", USER, False),
    ("Edit(/**)", USER, False),
    ("Edit(/**)", PROJECT, True),
    # `./` and bare paths from the working directory
    ("Edit(./specs/**)", USER, True),
    ("Edit(specs/**)", USER, True),
    ("Edit(./specs/001_auth)", PROJECT, True),
    ("Edit(./docs/**)", USER, False),
    # gitignore: a name without a slash matches at any depth, `dir/**` loses its `/**`
    ("Edit(specs)", LOCAL, True),
    ("Edit(reports/**)", USER, True),
    ("Edit(plans/**)", USER, False),
    ("Edit(**/reports/**)", USER, True),
    ("Edit(*.md)", USER, True),
    ("Edit(*.py)", USER, False),
    ("Edit(**)", USER, True),
    ("Edit(specs/)", USER, True),  # a directory, and what is in it
    # a slash inside anchors at the root, `*` stays inside one directory
    ("Edit(specs/*.md)", PROJECT, False),
    ("Edit(specs/*/reports/*.md)", PROJECT, True),
    ("Edit(specs/**/*.md)", PROJECT, True),
    ("Edit(specs/00?_auth/**)", PROJECT, True),
    ("Edit(specs/[0-9][0-9][0-9]_*/**)", PROJECT, True),
    ("Edit(specs/[!0-9]*/**)", PROJECT, False),
    # Read denies refuse writes too (2.1.331) and starve the steps that read the artifact
    ("Read(./specs/**)", USER, True),
    # the Write tool taken away
    ("Write", USER, True),
    ("Write(*)", PROJECT, True),
    # never consulted for a write, or the Edit tool alone: Write still makes the file
    ("Write(./specs/**)", USER, False),
    ("Write(**)", USER, False),
    ("Edit", USER, False),
    ("Edit(*)", USER, False),
    ("Bash(rm *)", USER, False),
    ("Edit(!specs/**)", USER, False),
    ("not a rule (", USER, False),
    ("", USER, False),
])
def test_deny_rule_forms(rule: str, scope: SettingsScope, expected: bool) -> None:
    assert denies(rule, scope) is expected


def test_the_configuration_directory_moves_user_roots() -> None:
    """CLAUDE_CONFIG_DIR: user settings live there, and their `/path` starts there."""
    roots = Roots(cwd=WS, home=HOME, config_dir=P("/srv/claude"))
    assert denies("Edit(/x/**)", USER, P("/srv/claude/x/y.md"), roots)
    assert not denies("Edit(/x/**)", USER, HOME / ".claude/x/y.md", roots)


def test_paths_outside_a_rules_root_are_not_covered() -> None:
    assert not denies("Edit(./specs/**)", USER, P("/elsewhere/specs/001/r.md"))
    assert not denies("Edit(~/x/**)", USER, P("/tmp/x/r.md"))
