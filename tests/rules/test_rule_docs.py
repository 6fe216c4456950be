"""Every rule's documentation names its convention and shows a reported case and a near
miss; the examples are run, so the docs cannot drift from what the rule does."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_lsp.rules.base import all_rules
from baton_lsp.rules.engine import check_file
from baton_lsp.rules.examples import examples
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.index import WorkspaceIndex

MACHINERY = {"BTN000", "BTN001", "BTN002", "BTN413", "BTN501", "BTN502", "BTN503", "BTN504",
             "BTN505", "BTN506"}
"""Rules fed by the engine, the configuration loader or a workflow run, not by one file's
text: their docs explain them in prose."""

RULES = [r for r in all_rules() if r.code not in MACHINERY]


def test_machinery_rules_exist() -> None:
    codes = {r.code for r in all_rules()}
    assert codes >= MACHINERY


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_rule_examples(rule, tmp_path: Path) -> None:
    cases = examples(rule.doc)
    assert any(c.reported for c in cases), f"{rule.code}: no `Reported:` example"
    assert any(not c.reported for c in cases), f"{rule.code}: no `Not reported:` example"
    for n, case in enumerate(cases):
        root = tmp_path / f"case{n}"
        (root / ".claude").mkdir(parents=True)
        for rel, text in case.files:
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        for rel, to in case.links:
            link = root / rel
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(to)
        index = WorkspaceIndex(root, load_config(root))  # a `.claude/baton.toml` applies
        last = root / case.files[-1][0]
        got = [f for f in check_file(index, last) if f.code == rule.code]
        if case.reported:
            assert got, f"{rule.code}: its `Reported:` example #{n} is not reported"
        else:
            assert not got, (f"{rule.code}: its `Not reported:` example #{n} is reported: "
                             f"{got[0].message}")
