"""The GitHub Action (issue 38): `action.yml` is a composite action whose work is
`scripts/action.sh`, run here as Actions runs it (its environment, `GITHUB_OUTPUT`): it
installs Baton from this repository into a fresh virtualenv, checks the example workspace
and writes SARIF 2.1.0, validated below against what the specification requires and what
code scanning's upload reads."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import EXAMPLE, REPO

SCRIPT = REPO / "scripts" / "action.sh"
ACTION = REPO / "action.yml"
PLAN = "ws/.claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"


def test_action_is_a_composite_that_runs_the_script_and_uploads() -> None:
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    check = next(s for s in steps if s.get("id") == "check")
    assert "scripts/action.sh" in check["run"] and check["shell"] == "bash"
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ steps.check.outputs.sarif-file }}"
    inputs = set(action["inputs"])
    for step in steps:
        # inputs reach the shell as environment variables, never pasted into its script
        assert "inputs." not in step.get("run", ""), step
        for value in (step.get("env") or {}).values():
            for name in re.findall(r"inputs\.([\w-]+)", value):
                assert name in inputs, name


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "BATON_VENV": str(tmp_path / "venv"),
            "BATON_CACHE_DIR": str(tmp_path / "cache"), "GITHUB_OUTPUT": str(tmp_path / "out"),
            **env}
    full.pop("VIRTUAL_ENV", None)
    return subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, env=full, capture_output=True,
                          text=True, timeout=900)


def _outputs(tmp_path: Path) -> dict[str, str]:
    lines = (tmp_path / "out").read_text(encoding="utf-8").splitlines()
    return dict(line.split("=", 1) for line in lines)


def _validate_sarif(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The properties SARIF 2.1.0 requires (sarifLog: version, runs; run: tool; tool: driver;
    toolComponent: name; result: message; message: text or id; physicalLocation:
    artifactLocation or address; region: startLine >= 1, a column range that ends after it
    starts), plus what code scanning reads (ruleId, a location per result, relative URIs
    resolved against %SRCROOT%)."""
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(doc["runs"], list) and len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "baton" and driver["semanticVersion"]
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    assert all(r["shortDescription"]["text"] and r["defaultConfiguration"]["level"] in
               {"error", "warning", "note", "none"} for r in driver["rules"])
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file://") and base.endswith("/")
    for result in run["results"]:
        assert result["message"]["text"]
        assert result["ruleId"] in rule_ids and rule_ids[result["ruleIndex"]] == result["ruleId"]
        assert result["level"] in {"error", "warning", "note", "none"}
        for loc in result["locations"] + result.get("relatedLocations", []):
            physical = loc["physicalLocation"]
            artifact = physical["artifactLocation"]
            assert artifact["uriBaseId"] == "%SRCROOT%" and not artifact["uri"].startswith("/")
            region = physical["region"]
            assert region["startLine"] >= 1 and region["startColumn"] >= 1
            assert (region["endLine"], region["endColumn"]) >= (region["startLine"],
                                                                 region["startColumn"])
    return run["results"]  # type: ignore[no-any-return]


def test_the_action_script_installs_checks_and_writes_sarif(tmp_path: Path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "ws")
    r = _run(tmp_path, BATON_PATHS="ws", BATON_SARIF="reports/baton.sarif",
             BATON_ARGS="--no-shellcheck")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{PLAN}:30:19: BTN101" in r.stdout  # the readable log
    outputs = _outputs(tmp_path)
    assert outputs == {"sarif-file": "reports/baton.sarif", "exit-code": "1"}
    sarif = json.loads((tmp_path / "reports" / "baton.sarif").read_text(encoding="utf-8"))
    results = _validate_sarif(sarif)
    where = {(r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
              r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results}
    assert ("BTN101", PLAN, 30) in where and len(results) == 16
    assert sarif["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == \
        tmp_path.resolve().as_uri() + "/"

    # a usage error is the action's failure (exit 2), not an upload of nothing
    (tmp_path / "out").unlink()
    r = _run(tmp_path, BATON_PATHS="ws", BATON_ARGS="--select BTN999")
    assert r.returncode == 2 and "BTN999" in r.stderr
    assert _outputs(tmp_path)["exit-code"] == "2"
