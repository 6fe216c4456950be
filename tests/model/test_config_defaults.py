"""A workspace that configures nothing gets `BatonConfig.defaults()`, built without validators.

Equal to a validated `BatonConfig()` field for field, nested settings included, and a check of
such a tree builds no validator of the configuration's models (most trees have no
`[tool.baton]`; building those validators was a measurable part of a small tree's check)."""

from __future__ import annotations

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
    assert built.model_fields_set == validated.model_fields_set == set()
    # A setting still goes through validation, nested defaults and all.
    tuned = BatonConfig.model_validate({"workflow": {"timeout": 5}})
    assert tuned.workflow.timeout == 5 and tuned.workflow.codex == validated.workflow.codex


def test_an_unconfigured_tree_builds_no_configuration_validator(tmp_path: Path) -> None:
    (tmp_path / ".claude" / "agents").mkdir(parents=True)
    (tmp_path / ".claude" / "agents" / "a.md").write_text(
        "---\nname: a\ndescription: Reviews code.\n---\n\nReview the code.\n")
    assert load_config(tmp_path) == BatonConfig()
    probe = ("import sys\nfrom pydantic._internal._mock_val_ser import MockValSer\n"
             "from baton_lsp.cli.main import main\n"
             "from baton_lsp.model import config\n"
             "code = main(['check', '--no-cache', sys.argv[1]])\n"
             "print(sorted(n for n in ('BatonConfig', 'WorkflowSettings', 'ClaudeSettings') if "
             "not isinstance(getattr(config, n).__pydantic_validator__, MockValSer)))\n")
    out = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True,
                         text=True, check=False, timeout=300)
    assert out.stdout.strip().splitlines()[-1:] == ["[]"], out.stdout + out.stderr


def test_a_bad_setting_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "baton.toml").write_text("[workflow]\ntimeout = -1\n")
    try:
        load_config(tmp_path)
    except Exception as exc:  # ConfigError, with the setting named
        assert "workflow.timeout" in str(exc)
    else:
        raise AssertionError("a negative timeout was accepted")
