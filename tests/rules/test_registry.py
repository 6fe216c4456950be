"""`rules.MODULES_BY_KIND`: a file's first check imports only its kind's rule modules, so
the map must name every module that registers a rule for that kind."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict

from baton_lsp.model.base import Kind
from baton_lsp.rules import MODULES_BY_KIND
from baton_lsp.rules.base import all_rules


def test_every_module_with_rules_for_a_kind_is_loaded_for_it() -> None:
    needed: dict[str, set[str]] = defaultdict(set)
    for rule in all_rules():
        for kind in rule.kinds:
            needed[kind.value].add(rule.check.__module__.rsplit(".", 1)[1])
    for kind in Kind:
        loaded = set(MODULES_BY_KIND.get(kind.value, ("data_files",)))
        assert needed[kind.value] <= loaded, kind


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
