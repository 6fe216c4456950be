"""A workspace that configures nothing gets `BatonConfig.defaults()`, built without pydantic.

Equal to a validated `BatonConfig()` field for field, nested settings included, and a check of
such a tree (with the CLI's own flags too) never imports pydantic: importing it cost a small
tree's cold check more than its rules. A configuration file is still validated by it."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from baton_lsp.model.config import BatonConfig, WorkflowSettings
from baton_lsp.workspace.config import load_config


def test_defaults_equal_a_validated_empty_configuration() -> None:
    built, validated = BatonConfig.defaults(), BatonConfig.model_validate({})
    assert built == validated
    assert built.model_dump() == validated.model_dump()
    assert built.workflow.claude == WorkflowSettings.model_validate({}).claude
    # A setting still goes through validation, nested defaults and all.
    tuned = BatonConfig.model_validate({"workflow": {"timeout": 5}})
    assert tuned.workflow.timeout == 5 and tuned.workflow.codex == validated.workflow.codex


PROBE = """import sys
from baton_lsp.cli.main import main
code = main(['check', '--no-cache', '--format', 'json', *sys.argv[2:], sys.argv[1]])
print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core')))
"""


def _check_imports(root: Path, *flags: str) -> tuple[str, list[str]]:
    """`baton check` of `root` in a fresh interpreter: its exit code, the pydantic modules
    it imported."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(root), *flags], capture_output=True,
                         text=True, check=False, timeout=300)
    last = out.stdout.strip().splitlines()[-1:]
    assert last, out.stdout + out.stderr
    code, _, mods = last[0].partition(" ")
    return code, ast.literal_eval(mods)


def _tree(root: Path) -> Path:
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "agents" / "a.md").write_text(
        "---\nname: a\ndescription: Reviews code.\n---\n\nReview the code.\n")
    (root / ".claude" / "commands").mkdir()
    (root / ".claude" / "commands" / "c.md").write_text(
        "---\ndescription: Runs it.\n---\n\n```bash\necho $UNSET\n```\n")
    return root


def test_an_unconfigured_tree_is_checked_without_pydantic(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert load_config(root) == BatonConfig()
    for flags in ((), ("--no-shellcheck",), ("--select", "BTN2", "--shellcheck", "all"),
                  ("--ignore", "BTN1")):
        code, imported = _check_imports(root, *flags)
        assert code in ("0", "1") and imported == [], (flags, code, imported)


def test_the_cli_flags_apply_as_a_later_file_would(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / ".claude" / "baton.toml").write_text('shellcheck = true\nselect = ["BTN3"]\n')
    flagged = load_config(root, flags={"shellcheck": "off", "ignore": ["BTN301"]})
    merged = load_config(root, {"shellcheck": "off", "ignore": ["BTN301"]})
    assert flagged == merged and flagged.shellcheck == "off" and flagged.select == ["BTN3"]
    # A configured tree is validated, by pydantic, imported then.
    code, imported = _check_imports(root, "--no-shellcheck")
    assert code in ("0", "1") and "pydantic" in imported


def test_a_bad_setting_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "baton.toml").write_text("[workflow]\ntimeout = -1\n")
    try:
        load_config(tmp_path)
    except Exception as exc:  # ConfigError, with the setting named
        assert "workflow.timeout" in str(exc)
    else:
        raise AssertionError("a negative timeout was accepted")


def test_real_agents_and_commands_are_checked_without_pydantic(corpus: Path,
                                                              tmp_path: Path) -> None:
    """Real files of the shared corpus (its agents and commands, no checkpoint): the parse
    records, the rules and the default configuration, none of them pydantic's."""
    for kind in ("agents", "commands"):
        (tmp_path / ".claude" / kind).mkdir(parents=True)
        for src in sorted((corpus / ".claude" / kind).glob("*.md"))[:12]:
            shutil.copyfile(src, tmp_path / ".claude" / kind / src.name)
    code, imported = _check_imports(tmp_path, "--no-shellcheck")
    assert code in ("0", "1") and imported == [], (code, imported)


def test_valid_checkpoints_are_checked_without_pydantic(corpus: Path, tmp_path: Path) -> None:
    """The corpus's checkpoints (schema 1.2: BTN412 migrates them, BTN416 judges them) are
    read through `model.checkpoint_shape`; only a checkpoint that does not conform to its
    schema brings pydantic in, for BTN411's exact errors."""
    found = sorted((corpus / ".claude" / "checkpoints").glob("*/*.json"))
    assert found
    folder = tmp_path / ".claude" / "checkpoints"
    folder.mkdir(parents=True)
    for i, src in enumerate(found):
        shutil.copyfile(src, folder / f"{i}_{src.name}")
    code, imported = _check_imports(tmp_path, "--no-shellcheck")
    assert code == "0" and imported == [], (code, imported)
    out = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--no-cache", "--format",
                          "json", str(tmp_path)], capture_output=True, text=True, check=False,
                         timeout=300)
    codes = sorted({f["code"] for f in json.loads(out.stdout)})
    assert codes == ["BTN412", "BTN416"], out.stdout + out.stderr  # checked, not skipped
    (folder / "bad.json").write_text(
        (folder / f"0_{found[0].name}").read_text().replace('"current_phase": 2,',
                                                             '"current_phase": "two",', 1))
    code, imported = _check_imports(tmp_path, "--no-shellcheck", "--select", "BTN411")
    assert code == "1" and "pydantic" in imported


LAZY = ("tomllib", "difflib")
"""Imported by a check only when needed: TOML for a configuration file (with `datetime`),
difflib for a "did you mean" suggestion."""


def _lazy_imports(root: Path) -> list[str]:
    probe = PROBE.replace("('pydantic', 'pydantic_core')", repr(LAZY))
    assert probe != PROBE
    out = subprocess.run([sys.executable, "-c", probe, str(root), "--no-shellcheck"],
                         capture_output=True, text=True, check=False, timeout=300)
    code, _, mods = out.stdout.strip().splitlines()[-1].partition(" ")
    assert code in ("0", "1"), out.stdout + out.stderr
    return sorted({m.split(".")[0] for m in ast.literal_eval(mods)})


def test_toml_and_difflib_are_imported_only_when_needed(tmp_path: Path) -> None:
    root = _tree(tmp_path / "plain")
    assert _lazy_imports(root) == []
    # A configuration file is read (TOML); a misspelt tool name gets a suggestion.
    (root / "pyproject.toml").write_text("[tool.baton]\nignore = []\n")
    (root / ".claude" / "agents" / "b.md").write_text(
        "---\nname: b\ndescription: Reviews code.\ntools: Raed\n---\n\nReview the code.\n")
    assert _lazy_imports(root) == ["difflib", "tomllib"]


def test_plans_are_checked_without_hashlib(corpus: Path) -> None:
    """`hashlib` loads OpenSSL; a check hashes a plan only when a run's checkpoint recorded
    its hash (BTN5xx) or a checkpoint's plan is compared (BTN416), so the corpus (62 plans,
    no run history) is checked without it. The hash itself is unchanged."""
    import hashlib

    from baton_lsp.runs.digest import bytes_edited

    probe = PROBE.replace("m.split('.')[0] in ('pydantic', 'pydantic_core')",
                          "m in ('hashlib', '_hashlib')")
    assert probe != PROBE
    out = subprocess.run([sys.executable, "-c", probe, str(corpus), "--no-shellcheck"],
                         capture_output=True, text=True, check=False, timeout=300)
    code, _, mods = out.stdout.strip().splitlines()[-1].partition(" ")
    assert code in ("0", "1") and ast.literal_eval(mods) == [], out.stdout + out.stderr
    data = b"# Plan\n"
    assert not bytes_edited(data, hashlib.sha256(data).hexdigest(), None)
    assert bytes_edited(data + b"x", hashlib.sha256(data).hexdigest(), None)


LAZY_PATTERN_MODULES = ("hook_commands", "claude_settings", "shellcheck_cfg")
PATTERN_PROBE = """import re, sys
from baton_lsp.cli.main import main
code = main(['check', '--no-cache', '--format', 'json', *sys.argv[2:], sys.argv[1]])
try:
    from baton_lsp.lazy_pattern import LazyPattern
except ImportError:  # before it existed: every pattern a compiled `re.Pattern`
    LazyPattern = type(None)
found = [(m, k, v) for m in MODULES if 'baton_lsp.rules.' + m in sys.modules
         for k, v in vars(sys.modules['baton_lsp.rules.' + m]).items()]
print(code, sorted(f"{m}.{k}" for m, k, v in found if isinstance(v, re.Pattern)
                   or (isinstance(v, LazyPattern) and v.is_compiled)))
""".replace("MODULES", repr(LAZY_PATTERN_MODULES))


def test_hook_and_shellcheck_gate_patterns_are_compiled_only_when_used(corpus: Path,
                                                                      tmp_path: Path) -> None:
    """The ShellCheck gate is loaded for every command, the settings and hook rules for
    every settings file and every agent or skill with `hooks:` (not at all for the corpus
    now: a module never loaded compiles nothing); their patterns are compiled when a file
    has hooks (or ShellCheck runs), not for the corpus checked with ShellCheck off."""
    out = subprocess.run([sys.executable, "-c", PATTERN_PROBE, str(corpus), "--no-shellcheck"],
                         capture_output=True, text=True, check=False, timeout=300)
    code, _, compiled = out.stdout.strip().splitlines()[-1].partition(" ")
    assert code in ("0", "1") and ast.literal_eval(compiled) == [], out.stdout + out.stderr
    agent = tmp_path / ".claude" / "agents" / "a.md"
    agent.parent.mkdir(parents=True)
    agent.write_text("---\nname: a\ndescription: Reviews code.\nhooks:\n  PreToolUse:\n"
                     "    - matcher: Bash\n      hooks:\n        - type: command\n"
                     "          command: ./.claude/hooks/check.sh\n---\n\nReview the code.\n")
    (tmp_path / ".claude" / "hooks").mkdir()
    (tmp_path / ".claude" / "hooks" / "check.sh").write_text(
        "#!/bin/bash\necho \"blocked: $TOOL_INPUT\"\nexit 1\n")
    out = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--no-cache", "--format",
                          "json", str(tmp_path)], capture_output=True, text=True, check=False,
                         timeout=300)
    codes = {f["code"] for f in json.loads(out.stdout)}
    assert {"BTN809", "BTN810"} <= codes, out.stdout + out.stderr  # the patterns still work


RARE_PATTERNS = (
    "parse.markdown._LIST_ITEM", "parse.markdown._PROSE_HEADING",
    "parse.frontmatter._FLAT_KEY_RE", "parse.frontmatter._ITEM_RE",
    "parse.frontmatter._FLOW_ITEM_RE", "parse.text._SURROGATES", "parse.shell._BANG_MODE_RE",
    "parse.shell._CRON_RE", "parse.shell._LISTED_PATH_RE", "parse.plan._RANGE_RE",
    "parse.plan._TASK_REF_RE", "parse.plan._PHASE_HEADING_RE",
    "rules.agent_frontmatter._KEY_LINE_RE", "rules.agent_frontmatter._CLAUDE_FAMILY",
    "rules.agent_frontmatter._FILL_IN", "rules.agent_frontmatter._HANDLEBARS_BLOCK",
    "rules.command_bash._DELETE_RE", "rules.command_bash._STATEISH_RE",
    "rules.command_bash._WRITE_BEFORE_RE", "rules.command_bash._REMOVE_BEFORE_RE",
    "rules.command_bash._ASSIGNED_BEFORE_RE", "rules.command_bash._STATE_ID_BEFORE_RE",
    "rules.command_bash._LIB_GLOBAL_RE", "rules.command_bash._LIB_FUNC_START_RE",
    "rules.command_shellcheck._UNUSED_RE", "rules.command_shellcheck._BLOCK_LINE_RE",
    "rules.command_shellcheck._EXPANSION_RE", "rules.markdown_structure._MARKDOWN_LINE",
    "rules.markdown_structure._CODE_SHAPE", "rules.plan_phases._DEFINITION_AFTER",
    "parse.fences._REFERENCE", "parse.data._META_LINE_RE", "parse.signals.SIGNAL_LINE_RE",
    "rules.conventions._PROJECT_LIBRARY", "rules.data_files._FRAGMENT_RE",
    "rules.plan_metadata._NUMERIC_DATE_RE", "rules.command_tasks._FIELD_INDENT_RE",
    "rules.command_paths._BRACED_ARGS_RE",
    "parse.common._CODE_RE", "parse.agent._PLACEHOLDER_RE", "parse.shell._SLASH_USAGE_RE",
)
"""Module-level patterns of the parsers and of rules every tree loads that a check of the
corpus with ShellCheck off never runs (with five of markdown's HTML block patterns)."""

RARE_PROBE = """import re, sys
from baton_lsp.cli.main import main
code = main(['check', '--no-cache', '--format', 'json', '-j', '1', *sys.argv[2:], sys.argv[1]])
try:
    from baton_lsp.lazy_pattern import LazyPattern
except ImportError:  # before it existed: every pattern a compiled `re.Pattern`
    LazyPattern = type(None)
def compiled(v):
    return isinstance(v, re.Pattern) or (isinstance(v, LazyPattern) and v.is_compiled)
# A module the check never loaded (BTN330's with ShellCheck off) compiled nothing.
found = [(name, getattr(sys.modules['baton_lsp.' + name.rsplit('.', 1)[0]],
                        name.rsplit('.', 1)[1])) for name in NAMES
         if 'baton_lsp.' + name.rsplit('.', 1)[0] in sys.modules]
html = sys.modules['baton_lsp.parse.markdown']._HTML_BLOCKS
found += [(f"_HTML_BLOCKS[{i}][{j}]", pair[j]) for i, pair in enumerate(html[2:], 2)
          for j in (0, 1)]
print(code, sorted(name for name, v in found if compiled(v)))
""".replace("NAMES", repr(RARE_PATTERNS))


def test_rarely_needed_patterns_are_compiled_on_first_use(corpus: Path) -> None:
    """A cold check compiled every module-level pattern of the modules it loads; the ones
    that serve rare text (an HTML block other than a comment, a cron line, a flat front
    matter read leniently, ShellCheck's output, ...) are `LazyPattern`s now and stay
    uncompiled for the corpus checked with ShellCheck off."""
    out = subprocess.run([sys.executable, "-c", RARE_PROBE, str(corpus), "--no-shellcheck"],
                         capture_output=True, text=True, check=False, timeout=300)
    code, _, compiled = out.stdout.strip().splitlines()[-1].partition(" ")
    assert code in ("0", "1") and ast.literal_eval(compiled) == [], out.stdout + out.stderr


def test_shellcheck_off_imports_no_runner(tmp_path: Path) -> None:
    """With ShellCheck off, neither BTN330's module (`rules.SHELLCHECK_MODULES`) nor the
    runner behind it is loaded: its threads, `concurrent.futures` and `subprocess`."""
    from baton_lsp.rules.shellcheck_tool import find_shellcheck

    root = _tree(tmp_path)
    runner = ("baton_lsp.rules.shellcheck_run", "concurrent.futures", "subprocess")
    probe = PROBE.replace("m.split('.')[0] in ('pydantic', 'pydantic_core')",
                          f"m in {runner!r}")
    assert probe != PROBE
    for flags, expected in ((("--no-shellcheck",), []),
                            (("--shellcheck", "all"), sorted(runner))):
        if expected and find_shellcheck() is None:
            continue
        out = subprocess.run([sys.executable, "-c", probe, str(root), *flags],
                             capture_output=True, text=True, check=False, timeout=300)
        code, _, mods = out.stdout.strip().splitlines()[-1].partition(" ")
        assert code in ("0", "1") and ast.literal_eval(mods) == expected, out.stdout + out.stderr


MARKDOWN_IT_PROBE = """import sys
from baton_lsp.cli.main import main
code = main(['check', '--no-cache', '--format', 'json', '--no-shellcheck', sys.argv[1]])
print(code, sorted(m for m in sys.modules if m.split('.')[0] == 'markdown_it'))
"""


def test_a_swallowed_heading_is_confirmed_without_markdown_it(tmp_path: Path) -> None:
    """BTN003 confirms a heading a fence swallows (here past a list item) by markdown-it's
    block rules without importing markdown-it; a block quote still needs markdown-it."""
    root = _tree(tmp_path)
    agent = root / ".claude" / "agents" / "a.md"
    body = ("---\nname: a\ndescription: Reviews code.\n---\n\n# A\n\n- step one\n\n"
            "```markdown\n## Report\n```bash\nls\n```\n```\n\n## Return Format\n\nReturn it.\n")
    for quote, expected in (("", "[]"), ("> a quote\n\n", "['markdown_it'")):
        agent.write_text(body.replace("# A\n\n", "# A\n\n" + quote))
        out = subprocess.run([sys.executable, "-c", MARKDOWN_IT_PROBE, str(root)],
                             capture_output=True, text=True, check=False, timeout=300)
        report, _, code_and_mods = out.stdout.strip().rpartition("\n")
        assert "BTN003" in report and "Return Format" in report, out.stdout + out.stderr
        assert code_and_mods.split(" ", 1)[1].startswith(expected), code_and_mods


STORE_PROBE = """import sys
from baton_lsp.cli.main import main
code = main(['check', '--no-cache', '--format', 'json', '--no-shellcheck', sys.argv[1]])
print(code, 'baton_lsp.runs.store' in sys.modules)
"""


def test_a_checkpoint_outside_a_run_history_is_checked_without_the_run_store(
        tmp_path: Path) -> None:
    """BTN416 opens the run store (and with it hashlib's OpenSSL) only for an entry of a
    Baton run's history, not for a checkpoint the bash `save_checkpoint` wrote."""
    root = tmp_path
    saved = root / ".claude" / "data" / "checkpoints"
    saved.mkdir(parents=True)
    (saved / "implement_auth_20251112_091403.json").write_text(
        '{"schema_version": "1.2", "checkpoint_id": "implement_auth_001", "workflow_type": '
        '"implement", "project_name": "auth", "created_at": "2025-11-12T09:14:03Z", '
        '"status": "in_progress", "current_phase": 2, "completed_phases": [1]}\n')
    out = subprocess.run([sys.executable, "-c", STORE_PROBE, str(root)], capture_output=True,
                         text=True, check=False, timeout=300)
    report, _, last = out.stdout.strip().rpartition("\n")
    assert "BTN412" in report, out.stdout + out.stderr
    assert last.split()[1:] == ["False"], last


def test_a_check_with_checkpoints_does_not_scan_for_pydantic_plugins(tmp_path: Path) -> None:
    """The checkpoint rules build pydantic models for a checkpoint that does not conform to
    its schema; pydantic looks for plugins in every installed distribution's entry points on
    the first one unless told not to. A check needs none, so it tells pydantic not to look.
    (A valid checkpoint, as the corpus's, no longer imports pydantic at all.)"""
    saved = tmp_path / ".claude" / "data" / "checkpoints"
    saved.mkdir(parents=True)
    (saved / "implement_auth_20251112_091403.json").write_text(
        '{"schema_version": "1.2", "checkpoint_id": "implement_auth_001", "workflow_type": '
        '"implement", "project_name": "auth", "created_at": "2025-11-12T09:14:03Z", '
        '"status": "in_progress", "current_phase": "two", "completed_phases": [1]}\n')
    corpus = tmp_path
    probe = (
        "import sys, importlib.metadata as md\n"
        "seen = []\n"
        "real = md.entry_points\n"
        "def spy(**kw):\n"
        "    seen.append(kw.get('group'))\n"
        "    return real(**kw)\n"
        "md.entry_points = spy\n"
        "from baton_lsp.cli.main import main\n"
        "main(['check', '--no-cache', '--no-shellcheck', sys.argv[1]])\n"
        "print('PYDANTIC' in ' '.join(map(str, sys.modules)).upper(), seen, file=sys.stderr)\n"
    )
    run = subprocess.run([sys.executable, "-c", probe, str(corpus)], capture_output=True,
                         text=True, timeout=300, env={k: v for k, v in os.environ.items()
                                                      if k != "PYDANTIC_DISABLE_PLUGINS"})
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("True") and "pydantic" not in last.split(" ", 1)[1], last
