"""`rules.MODULES_BY_KIND`: a file's first check imports only its kind's rule modules, so
the map must name every module that registers a rule for that kind."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from baton_lsp.model.base import Kind
from baton_lsp.rules import HOOK_MODULES, MODULES_BY_KIND, SHELLCHECK_MODULES
from baton_lsp.rules.base import all_rules


def test_every_module_with_rules_for_a_kind_is_loaded_for_it() -> None:
    """An agent's or skill's hook rules are loaded with `hooks:` (`HOOK_MODULES`), a
    command's BTN330 where ShellCheck runs (`SHELLCHECK_MODULES`), the rest with the kind."""
    needed: dict[str, set[str]] = defaultdict(set)
    for rule in all_rules():
        for kind in rule.kinds:
            needed[kind.value].add(rule.check.__module__.rsplit(".", 1)[1])
    for kind in Kind:
        loaded = set(MODULES_BY_KIND.get(kind.value, ("data_files",)))
        if kind in (Kind.AGENT, Kind.SKILL):
            loaded |= set(HOOK_MODULES)
        if kind in (Kind.COMMAND, Kind.OPENCODE_COMMAND):
            loaded |= set(SHELLCHECK_MODULES)
        assert needed[kind.value] <= loaded, kind


_HOOKED_AGENT = """---
name: reviewer
description: Reviews changes
hooks:
  postToolUse:
    - matcher: "Edit|Write"
      hooks:
        - type: command
          command: "npm run lint"
---
Review the diff.
"""

_LOADED = """
import contextlib, io, pathlib, sys
from baton_lsp.cli.main import main
HOOK_RULES = ('baton_lsp.rules.claude_settings', 'baton_lsp.rules.hook_commands')
def run(path):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(['check', path, '--format', 'json', '--no-cache', '-j', '1'])
        except SystemExit:
            pass
    return out.getvalue()
run(sys.argv[1])
print(sorted(m for m in HOOK_RULES if m in sys.modules))
(pathlib.Path(sys.argv[1]) / '.claude/agents/reviewer.md').write_text(sys.argv[2])
found = run(sys.argv[1])
print(sorted(m for m in HOOK_RULES if m in sys.modules))
print('BTN802' in found)
"""


def test_hook_rules_load_only_for_an_agent_or_skill_with_hooks(tmp_path: Path) -> None:
    """`baton check` of a tree whose agents and skills have no `hooks:` never imports the
    hook rules' modules (imported for every agent and skill before); an agent with `hooks:`
    loads them and gets BTN802, in the same process."""
    ws = tmp_path / "ws"
    (ws / ".claude" / "agents").mkdir(parents=True)
    (ws / ".claude" / "skills" / "tidy").mkdir(parents=True)
    (ws / ".claude" / "agents" / "plain.md").write_text(
        "---\nname: plain\ndescription: Reads files\n---\nRead the files.\n")
    (ws / ".claude" / "skills" / "tidy" / "SKILL.md").write_text(
        "---\nname: tidy\ndescription: Tidies the tree\n---\nTidy it.\n")
    out = subprocess.run([sys.executable, "-c", _LOADED, str(ws), _HOOKED_AGENT],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "[]", lines
    assert lines[1] == "['baton_lsp.rules.claude_settings', 'baton_lsp.rules.hook_commands']"
    assert lines[2] == "True"


_SHELLCHECK_LOADED = """
import contextlib, io, json, sys
from baton_lsp.cli.main import main
def run(*flags):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(['check', sys.argv[1], '--format', 'json', '--no-cache', '-j', '1', *flags])
    return json.loads(out.getvalue())
found = run('--no-shellcheck')
print('baton_lsp.rules.command_shellcheck' in sys.modules, any(
    f['code'] == 'BTN330' for f in found))
found = run('--shellcheck', 'all')
print('baton_lsp.rules.command_shellcheck' in sys.modules, any(
    f['code'] == 'BTN330' for f in found))
"""


def test_btn330_loads_only_where_shellcheck_runs(tmp_path: Path) -> None:
    """With ShellCheck off BTN330 returns at once, yet its module (with ShellCheck's
    configuration) was imported for every command; now only where ShellCheck runs, which
    in the same process then reports the broken block."""
    commands = tmp_path / "ws" / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "go.md").write_text(
        "---\ndescription: Go\n---\n# Go\n\n```bash\nset -e\nif [ -f x ]; then\n"
        "  echo yes\n```\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", _SHELLCHECK_LOADED, str(tmp_path / "ws")],
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.stdout.splitlines() == ["False False", "True True"], out.stdout + out.stderr


def test_a_first_check_loads_only_its_kind() -> None:
    """In a fresh interpreter, checking a plan leaves the command rules (and ShellCheck's
    module) unloaded, and finds what a full load finds."""
    script = (
        "import sys\n"
        "from baton_lsp.model.base import Kind\n"
        "from baton_lsp.rules.engine import check_text, rules_for\n"
        "text = '# Plan\\n\\n### Phase 1: A\\ndependencies: [7]\\n- [ ] task\\n'\n"
        "first = [f.code for f in check_text(Kind.PLAN, text, '/ws/.claude/specs/1/plans/p.md')]\n"
        "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules\n"
        "             if m.startswith('baton_lsp.rules.') and 'command' in m))\n"
        "print(first)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True).stdout.splitlines()
    assert out[0] == "[]"
    assert "BTN101" in out[1]


def test_the_code_index_names_every_registered_rule() -> None:
    """`RULE_CODES` lets `select` / `ignore` be checked without importing every rule module:
    it must be exactly the registry's codes (add a new rule's code there)."""
    from baton_lsp.rules import RULE_CODES

    assert {r.code for r in all_rules()} == set(RULE_CODES)


def test_select_and_ignore_are_judged_once_per_kind_not_per_file() -> None:
    """`check_document` asked `config.enabled` for every rule of every file (a few thousand
    calls on the corpus); the rules a selection keeps are now worked out once per kind and
    selection, and a selection changed in place is still honoured."""
    from baton_lsp.model.config import BatonConfig
    from baton_lsp.rules.engine import check_text

    config = BatonConfig(select=["BTN1"], ignore=["BTN12"])
    plan = "# Plan 7c1e\n\n### Phase 1: a [COMPLETE]\n- [ ] x\n\n### Phase 1: b\n"
    asked: list[str] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is BatonConfig.enabled.__code__:
            asked.append(frame.f_locals["code"])

    sys.setprofile(profile)
    try:
        runs = [check_text(Kind.PLAN, plan, f"/ws/.claude/specs/plans/{n}.md", config=config)
                for n in range(3)]
        config.select = ["BTN11"]
        narrowed = check_text(Kind.PLAN, plan, "/ws/.claude/specs/plans/3.md", config=config)
    finally:
        sys.setprofile(None)
    codes = [sorted({f.code for f in found}) for found in runs]
    assert codes[0] and codes == [codes[0]] * 3
    assert all(c.startswith("BTN1") and not c.startswith("BTN12") for c in codes[0])
    assert {f.code for f in narrowed} == {c for c in codes[0] if c.startswith("BTN11")}
    plan_rules = [r.code for r in all_rules() if Kind.PLAN in r.kinds]
    assert len(asked) == 2 * len(plan_rules)  # once for each selection, not once per file


def test_a_rule_registers_without_cleaning_its_docstring() -> None:
    """Registering a rule (a check imports about a hundred) no longer cleans its docstring
    (`inspect.getdoc`); `Rule.doc` does so where documentation is shown, with the same
    text. A rule without a docstring is still refused."""
    import inspect

    import pytest

    from baton_lsp.model.base import Severity
    from baton_lsp.rules.base import registered, rule, unregister

    def check(doc: object, ctx: object) -> list[object]:
        """A test rule.

            Indented example.
        """
        return []

    cleaned: list[int] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is inspect.cleandoc.__code__:
            cleaned.append(1)

    sys.setprofile(profile)
    try:
        rule("TST902", "test-docstring", Severity.WARNING, (Kind.PLAN,))(check)
    finally:
        sys.setprofile(None)
    try:
        assert cleaned == []
        found = registered("TST902")
        assert found is not None and found.doc == inspect.getdoc(check) == (
            "A test rule.\n\nIndented example.")
        assert found.summary == "A test rule."
    finally:
        unregister("TST902")

    def bare(doc: object, ctx: object) -> list[object]:
        return []

    bare.__doc__ = "  \n  "
    with pytest.raises(ValueError, match="needs a docstring"):
        rule("TST903", "test-no-docstring", Severity.WARNING, (Kind.PLAN,))(bare)
