"""The result cache (rules/cache.py): warm results equal cold ones byte for byte, an edit of
anything a finding was computed from shows at once, and a damaged cache is only a miss."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.rules import command_shellcheck, shellcheck_tool
from baton_lsp.rules.cache import ResultCache, clean
from baton_lsp.rules.checker import check_paths
from baton_lsp.rules.conventions import STANDARD_DOC
from tests.helpers import ShellcheckRuns
from tests.rules.cached_tree import AGENT, PLAN_PATH, REPORT_PATH, run_baton


def check(root: Path, cache_dir: Path) -> tuple[list[tuple[str, str, int, str]], int]:
    """(code, file name, line, message) of every finding, and how many files the cache gave.

    `strict=False`: these files were written a moment ago, and the check must trust that
    they are not still changing (the margin for coarse timestamps is tested below)."""
    cache = ResultCache(cache_dir, strict=False)
    result = check_paths([root], cache=cache)
    hits, _ = cache.stats()
    return [(f.code, Path(f.path).name, f.range.start_line, f.message)
            for f in result.findings], hits


def codes(found: list[tuple[str, str, int, str]]) -> list[tuple[str, str]]:
    return [(code, name) for code, name, _, _ in found]


# -- never stale -------------------------------------------------------------------------


def test_corpus_warm_output_equals_cold_byte_for_byte(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for fmt in ("text", "json"):
        fresh = run_baton("check", str(corpus), "--format", fmt, "--no-cache")
        cold = run_baton("-v", "check", str(corpus), "--format", fmt, cache=cache)
        replayed = run_baton("-v", "check", str(corpus), "--format", fmt, cache=cache)
        assert "its output replayed" in replayed.stderr
        # Without the stored whole check, every file's result comes from the cache.
        shutil.rmtree(cache / "v1" / "runs")
        warm = run_baton("-v", "check", str(corpus), "--format", fmt, cache=cache)
        assert "replayed" not in warm.stderr
        assert cold.returncode == warm.returncode == replayed.returncode \
            == fresh.returncode == 1
        assert cold.stdout == warm.stdout == replayed.stdout == fresh.stdout
        assert "Traceback" not in cold.stderr + warm.stderr + replayed.stderr
        files = json.loads(warm.stdout) if fmt == "json" else None
        assert files is None or len(files) > 100
        # Every file came from the cache the second time (the corpus is old: nothing racy,
        # and its unfinished checkpoints are older than BTN416's age limit already).
        line = next(x for x in warm.stderr.splitlines() if "from the result cache" in x)
        hit, _, total = line.split("INFO: ", 1)[1].split(" files", 1)[0].partition(" of ")
        assert int(hit) == int(total) > 100
    assert not list((cache / "v1" / "checks").glob("*.tmp"))


def test_editing_an_agent_changes_the_command_finding(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    found, _ = check(tree, cache)
    assert "BTN314" not in [c for c, _ in codes(found)]
    again, hits = check(tree, cache)
    assert again == found and hits == 4  # warm: every file from the cache
    agent = tree / ".claude/agents/research-specialist.md"
    agent.write_text(AGENT.replace("REPORT_CREATED", "REPORT_CREATEX"))  # same size
    after, hits = check(tree, cache)
    assert ("BTN314", "deploy.md") in codes(after)
    assert hits < 4
    agent.write_text(AGENT)
    assert check(tree, cache)[0] == found


def test_deleting_a_linked_report_changes_the_plan_finding(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    found, _ = check(tree, cache)
    assert ("BTN130", "001-plan.md") not in codes(found)
    assert check(tree, cache) == (found, 4)
    (tree / REPORT_PATH).unlink()
    after, _ = check(tree, cache)
    assert ("BTN130", "001-plan.md") in codes(after)
    (tree / REPORT_PATH).write_text("# Report\n")
    assert check(tree, cache)[0] == found


def test_adding_the_plan_standard_turns_its_rules_on(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    found, _ = check(tree, cache)
    assert "BTN120" not in [c for c, _ in codes(found)]
    assert check(tree, cache) == (found, 4)
    (tree / STANDARD_DOC).parent.mkdir(parents=True)
    (tree / STANDARD_DOC).write_text("# Plan metadata standard\n")
    after, _ = check(tree, cache)
    assert ("BTN120", "001-plan.md") in codes(after)  # Status, Estimated Hours are missing


def test_configuration_is_part_of_the_key(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    (tree / ".claude/agents/research-specialist.md").write_text(AGENT.replace(
        "REPORT_CREATED", "REPORT_CREATEX"))
    found, _ = check(tree, cache)
    assert ("BTN314", "deploy.md") in codes(found)
    (tree / ".claude/baton.toml").write_text('ignore = ["BTN314"]\n')
    after, hits = check(tree, cache)
    assert "BTN314" not in [c for c, _ in codes(after)] and hits == 0
    (tree / ".claude/baton.toml").unlink()
    assert check(tree, cache) == (found, 4)  # the old configuration's entries still hold


def test_a_file_changed_while_being_checked_is_not_stored(tree: Path, tmp_path: Path) -> None:
    """A result is stored only when the file and its inputs last changed a few timestamp
    ticks before the check started: a change in the same tick as the check's read would
    leave `stat` unchanged, so such a result could outlive the edit."""
    from baton_lsp.model.base import Kind
    from baton_lsp.paths import FINE_RACY_NS
    from baton_lsp.rules.cache import Digest
    from baton_lsp.workspace.index import WorkspaceIndex

    index = WorkspaceIndex(tree)
    plan = str(tree / PLAN_PATH)
    changed = os.stat(plan).st_ctime_ns
    assert changed % 1_000_000_000  # sub-second timestamps here: the fine margin applies
    store = ResultCache(tmp_path / "cache").workspace(index)
    inputs = {str(tree / REPORT_PATH)}
    report_changed = os.stat(str(tree / REPORT_PATH)).st_ctime_ns
    latest = max(changed, report_changed)
    for started, kept in [(changed - 1, False), (latest + FINE_RACY_NS // 2, False),
                          (latest + FINE_RACY_NS + 1, True)]:
        digest = Digest("sha", started, overlay=False)
        assert store.store(index, plan, Kind.PLAN, digest, [], inputs, set(), None) is kept
    assert ResultCache(tmp_path / "cache", strict=False).workspace(index).store(
        index, plan, Kind.PLAN, Digest("sha", latest + 1, False), [], inputs, set(), None)


def test_opening_a_file_as_saved_keeps_its_cached_result(tree: Path, tmp_path: Path) -> None:
    """The editor's text of a file as saved is the file: its stored result holds (the
    server's first diagnostics come from the cache). Opening it listed it twice in its
    directory's fingerprint, so every file that had listed that directory missed; a new,
    unsaved document in the directory still changes what such a rule sees."""
    from baton_lsp.rules.engine import check_file
    from baton_lsp.workspace.index import WorkspaceIndex

    plan = tree / PLAN_PATH
    cache = ResultCache(tmp_path / "cache", strict=False)
    cold = check_file(WorkspaceIndex(tree), plan, cache=cache)
    assert cache.stats()[0] == 0
    cache.save()
    index = WorkspaceIndex(tree)
    index.set_overlay(plan, plan.read_text(encoding="utf-8"))
    warm = ResultCache(tmp_path / "cache", strict=False)
    assert check_file(index, plan, cache=warm) == cold and warm.stats()[0] == 1
    listing = warm.workspace(index)
    bare = listing.fingerprint(WorkspaceIndex(tree), str(plan.parent), fresh=True)
    assert listing.fingerprint(index, str(plan.parent), fresh=True) == bare
    index.set_overlay(plan.parent / "002-new.md", "# New plan\n")  # unsaved, not on disk
    assert listing.fingerprint(index, str(plan.parent), fresh=True) != bare


def test_a_judgement_against_the_clock_expires(tmp_path: Path) -> None:
    """BTN416 reports a checkpoint's age once it is over the limit: a judgement made before
    that is kept only until then, and an expired entry is checked again."""
    import datetime as dt

    from baton_lsp.runs.checkpoint import MAX_RESUME_AGE

    root = tmp_path / "ws"
    created = dt.datetime.now(dt.UTC) - dt.timedelta(days=1)
    path = root / ".claude/data/checkpoints/implement_auth_20251007_050046.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "schema_version": "1.2", "checkpoint_id": "implement_auth_001",
        "workflow_type": "implement", "project_name": "auth",
        "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ"), "status": "in_progress",
        "current_phase": 2, "tests_passing": False}))
    cache_dir = tmp_path / "cache"
    found, _ = check(root, cache_dir)
    (judged,) = [f for f in found if f[0] == "BTN416"]  # tests failing, not (yet) its age
    assert "Tests failing" in judged[3] and "days old" not in judged[3]
    (stored,) = (cache_dir / "v1/checks").glob("*.json")
    raw = json.loads(stored.read_text())
    (entry,) = raw["entries"].values()
    turns = created.replace(microsecond=0) + MAX_RESUME_AGE
    assert abs(entry["expires"] - turns.timestamp()) < 1
    assert check(root, cache_dir) == (found, 1)
    entry["expires"] = 1.0  # the moment has passed: checked again, not served
    stored.write_text(json.dumps(raw))
    assert check(root, cache_dir) == (found, 0)


# -- damaged caches and concurrent writers --------------------------------------------------


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong-shape", "bad-entries",
                                    "empty"])
def test_a_damaged_cache_is_a_miss_never_a_crash(corpus: Path, tmp_path: Path,
                                                  damage: str) -> None:
    cache = tmp_path / "cache"
    reference = run_baton("check", str(corpus), "--no-cache")
    assert run_baton("check", str(corpus), cache=cache).stdout == reference.stdout
    files = sorted((cache / "v1").rglob("*.json"))
    assert len(files) > 2
    for path in files:
        data = path.read_bytes()
        if damage == "truncate":
            path.write_bytes(data[: len(data) // 2])
        elif damage == "garbage":
            path.write_bytes(b"\x00\xff{not json" * 10)
        elif damage == "wrong-shape":
            path.write_text("[1, 2, 3]")
        elif damage == "empty":
            path.write_bytes(b"")
        else:  # the key matches, the entries do not make sense
            raw = json.loads(data)
            if "entries" in raw:
                raw["entries"] = {k: {"kind": v["kind"], "sha": v["sha"], "inputs": 7,
                                      "findings": [["x"]]} for k, v in raw["entries"].items()}
                raw["hashes"] = {k: ["a", "b"] for k in raw["hashes"]}
            else:
                raw = {k: "not a list" for k in raw}
            path.write_text(json.dumps(raw))
    damaged = run_baton("check", str(corpus), cache=cache)
    assert damaged.returncode == reference.returncode
    assert damaged.stdout == reference.stdout
    assert "Traceback" not in damaged.stderr and "internal error" not in damaged.stderr
    assert run_baton("check", str(corpus), cache=cache).stdout == reference.stdout


def test_concurrent_writers_leave_a_whole_cache(corpus: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    reference = run_baton("check", str(corpus), "--no-cache").stdout
    env = {**os.environ, "BATON_CACHE_DIR": str(cache)}
    procs = [subprocess.Popen([sys.executable, "-m", "baton_lsp", "check", str(corpus)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(4)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(out == reference for out, _ in outputs)
    assert all("Traceback" not in err for _, err in outputs)
    for path in (cache / "v1").rglob("*"):
        assert not path.name.endswith(".tmp")
        if path.suffix == ".json":
            json.loads(path.read_bytes())  # whole: one writer's file, never a mix
    warm = run_baton("-v", "check", str(corpus), cache=cache)
    assert warm.stdout == reference
    assert "from the result cache" in warm.stderr or "its output replayed" in warm.stderr


# -- commands --------------------------------------------------------------------------------


def test_no_cache_writes_nothing_and_clean_removes_the_cache(tree: Path,
                                                             tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert run_baton("check", str(tree), "--no-cache", cache=cache).returncode in (0, 1)
    assert not cache.exists()
    run_baton("check", str(tree), "--cache-dir", str(cache))
    assert (cache / "CACHEDIR.TAG").is_file() and list((cache / "v1").rglob("*.json"))
    (cache / "unrelated.txt").write_text("not ours")
    out = run_baton("clean", "--cache-dir", str(cache))
    assert out.returncode == 0 and "removed the result cache" in out.stdout
    assert sorted(p.name for p in cache.iterdir()) == ["unrelated.txt"]
    assert clean(tmp_path / "nothing-here") == []


# -- ShellCheck ------------------------------------------------------------------------------

SCRIPT_COMMAND = ("---\ndescription: d\n---\n\n# /prune\n\n```bash\n"
                  'source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"\n'
                  "COUNT=$(find specs -name '*.md' | wc -l)\n"
                  'if [ "$COUNT" > 100 ]; then\n  echo "too many"\nfi\n```\n\n'
                  "```bash\nlocal x=1\necho \"$x\"\n```\n")


def test_shellcheck_results_are_kept_per_block_and_version(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    if command_shellcheck.find_shellcheck() is None:
        pytest.skip("shellcheck is not installed")
    root = tmp_path / "ws"
    cmd = root / ".claude/commands/prune.md"
    cmd.parent.mkdir(parents=True)
    cmd.write_text(SCRIPT_COMMAND)
    runs = ShellcheckRuns(monkeypatch)
    command_shellcheck.reset()
    cache = ResultCache(tmp_path / "cache", strict=False)
    first = [f.tags for f in check_paths([root], cache=cache).findings if f.code == "BTN330"]
    assert ["SC2071"] in first and ["SC2168"] in first and len(runs.blocks) == 2
    version = shellcheck_tool.shellcheck_version(command_shellcheck.find_shellcheck() or "")
    assert version[0].isdigit()  # e.g. 0.11.0
    stored = list((tmp_path / "cache/v1/shellcheck").glob("*.json"))
    assert len(stored) == 1 and len(json.loads(stored[0].read_text())) == 2
    # A new process (no memory of the results) after an edit of the second block runs
    # ShellCheck on that block only.
    command_shellcheck.reset()
    cmd.write_text(SCRIPT_COMMAND.replace("local x=1", "local y=1"))
    runs.clear()
    cache = ResultCache(tmp_path / "cache", strict=False)
    second = [f.tags for f in check_paths([root], cache=cache).findings if f.code == "BTN330"]
    assert second == first and len(runs.blocks) == 1 and "local y=1" in runs.blocks[0]


def test_an_upgraded_shellcheck_invalidates_results(tmp_path: Path) -> None:
    """The binary's identity is in the key: a different ShellCheck is never trusted with
    the old one's results."""
    if command_shellcheck.find_shellcheck() is None:
        pytest.skip("shellcheck is not installed")
    before = shellcheck_tool.shellcheck_identity()
    fake = tmp_path / "bin" / "shellcheck"
    fake.parent.mkdir()
    fake.write_bytes(Path(command_shellcheck.find_shellcheck() or "").read_bytes() + b"\0")
    fake.chmod(0o755)
    command_shellcheck.reset()
    try:
        os.environ["PATH"] = f"{fake.parent}{os.pathsep}{os.environ['PATH']}"
        assert shellcheck_tool.shellcheck_identity() != before
    finally:
        os.environ["PATH"] = os.environ["PATH"].split(os.pathsep, 1)[1]
        command_shellcheck.reset()
    assert shellcheck_tool.shellcheck_identity() == before
