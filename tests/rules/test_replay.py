"""Replaying a whole check (rules/replay.py): an unchanged tree prints the stored output,
byte for byte what a fresh check prints; a change to anything the check read — a checked
file, a cross-file input, a directory listing, the configuration, a run store, the clock —
is never replayed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from baton_lsp.rules.cache import ResultCache
from baton_lsp.rules.checker import check_paths
from baton_lsp.rules.replay import Reads, Replayed, Request, Target, record, replay
from tests.rules.cached_tree import AGENT, PLAN_PATH, REPORT_PATH, run_baton

REPLAYED = "its output replayed"
BROKEN_PATH = ".claude/specs/002_y/plans/001-plan.md"
BROKEN = "# Plan\n\n### Phase 1: Setup\ndependencies: [7]\n\n- [ ] Do\n"
"""A plan whose phase depends on one that does not exist: BTN101, an error."""


def baton(path: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = run_baton("-v", "check", str(path), *args, cache=cache)
    assert "Traceback" not in out.stderr, out.stderr
    return out


def fresh(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_baton("check", str(path), "--no-cache", *args)


def settle(path: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Check until the check is stored for replay: the first run may find files written a
    moment ago too fresh to trust their `stat`; by the second they are not."""
    baton(path, cache, *args)
    baton(path, cache, *args)
    out = baton(path, cache, *args)
    assert REPLAYED in out.stderr, out.stderr
    return out


def same_as_fresh(path: Path, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A check right after a change: not replayed, and what a check without cache prints."""
    out = baton(path, cache, *args)
    assert REPLAYED not in out.stderr
    reference = fresh(path, *args)
    assert (out.stdout, out.returncode) == (reference.stdout, reference.returncode)
    return out


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_a_replay_prints_what_a_fresh_check_prints(tree: Path, tmp_path: Path,
                                                   fmt: str) -> None:
    (tree / BROKEN_PATH).parent.mkdir(parents=True)
    (tree / BROKEN_PATH).write_text(BROKEN)  # an error: exit status 1
    cache = tmp_path / "cache"
    out = settle(tree, cache, "--format", fmt)
    reference = fresh(tree, "--format", fmt)
    assert out.stdout == reference.stdout and "BTN101" in out.stdout
    assert out.returncode == reference.returncode == 1
    assert baton(tree, cache, "--format", fmt, "--exit-zero").returncode == 0


def test_every_kind_of_change_is_seen(tree: Path, tmp_path: Path,
                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    cache = tmp_path_factory.mktemp("cache")  # outside the checked tree (it changes)
    settle(tree, cache)
    # A cross-file input: the agent a command's Task names no longer returns its signal.
    agent = tree / ".claude/agents/research-specialist.md"
    agent.write_text(AGENT.replace("REPORT_CREATED", "REPORT_CREATEX"))  # same size
    assert "BTN314" in same_as_fresh(tree, cache).stdout
    agent.write_text(AGENT)
    assert "BTN314" not in same_as_fresh(tree, cache).stdout
    settle(tree, cache)
    # A link's target deleted (a listing and a missing path).
    (tree / REPORT_PATH).unlink()
    assert "BTN130" in same_as_fresh(tree, cache).stdout
    settle(tree, cache)
    # A new file deep in the tree (the walk's listing of its directory).
    deep = tree / BROKEN_PATH
    deep.parent.mkdir(parents=True)
    deep.write_text(BROKEN)
    assert "002_y" in same_as_fresh(tree, cache).stdout
    settle(tree, cache)
    # The configuration, created where none was.
    (tree / ".claude/baton.toml").write_text('ignore = ["BTN130"]\n')
    assert "BTN130" not in same_as_fresh(tree, cache).stdout
    settle(tree, cache)
    # A workspace of its own appears below the checked directory.
    other = tmp_path / "other" / ".claude/agents/x.md"
    other.parent.mkdir(parents=True)
    other.write_text("---\nname: x\n---\n\n# X\n")
    settle(tmp_path, cache)
    other.write_text("---\nname: y\n---\n\n# X\n")  # name and file name now differ
    assert "x.md" in same_as_fresh(tmp_path, cache).stdout


def test_only_the_files_that_read_a_change_are_checked_again(tree: Path,
                                                             tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    settle(tree, cache)
    agent = tree / ".claude/agents/research-specialist.md"
    agent.write_text(AGENT.replace("REPORT_CREATED", "REPORT_CREATEX"))
    out = same_as_fresh(tree, cache)
    # The agent and the command whose Task names it; the plan and its report kept theirs.
    assert "2 of 4 files read something that changed" in out.stderr
    assert "0 of 2 files from the result cache" in out.stderr
    assert "BTN314" in out.stdout
    again = settle(tree, cache)
    assert again.stdout == out.stdout
    (tree / REPORT_PATH).write_text("# Report, longer now\n")
    out = same_as_fresh(tree, cache)
    # The report itself and the plan that links it; the agent and the command kept theirs.
    assert "2 of 4 files read something that changed" in out.stderr
    # Written as editors and git write files: a new file renamed over the old one. Its
    # directory changed, the names in it did not.
    plan = tree / PLAN_PATH
    settle(tree, cache)
    fresh_copy = plan.with_name(".001-plan.md.swp")
    fresh_copy.write_text(plan.read_text() + "\n- [ ] One more task\n")
    os.replace(fresh_copy, plan)
    out = same_as_fresh(tree, cache)
    assert "1 of 4 files read something that changed" in out.stderr
    # A file that came and went: the root's directory changed, nothing in the tree did.
    settle(tree, cache)
    (tree / "scratch.tmp").write_text("x")
    (tree / "scratch.tmp").unlink()
    out = same_as_fresh(tree, cache)
    assert "0 of 4 files read something that changed" in out.stderr
    assert "no workspace found" not in out.stderr
    # A new file changes a listing the discovery read: everything is looked at again.
    settle(tree, cache)
    (tree / ".claude/agents/other.md").write_text(AGENT.replace("research-specialist", "o"))
    out = same_as_fresh(tree, cache)
    assert "the tree's shape changed" in out.stderr


def test_a_git_checkout_rechecks_what_it_changed(tree: Path, tmp_path: Path) -> None:
    """Real git: switching branches rewrites the files that differ (a new file each) and
    leaves the tree's names alone, so only those files and what reads them are checked."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com",
                        *args], cwd=tree, check=True, capture_output=True, timeout=60)

    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    git("checkout", "-q", "-b", "other")
    (tree / ".claude/agents/research-specialist.md").write_text(
        AGENT.replace("REPORT_CREATED", "REPORT_CREATEX"))
    git("commit", "-q", "-am", "the agent no longer signals")
    git("checkout", "-q", "main")
    cache = tmp_path / "cache"
    settle(tree, cache)
    git("checkout", "-q", "other")
    out = same_as_fresh(tree, cache)
    assert "2 of 4 files read something that changed" in out.stderr
    assert "BTN314" in out.stdout
    settle(tree, cache)
    git("checkout", "-q", "main")
    assert "BTN314" not in same_as_fresh(tree, cache).stdout


def test_options_and_paths_are_separate_requests(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    settle(tree, cache)
    narrowed = baton(tree, cache, "--select", "BTN3")
    assert REPLAYED not in narrowed.stderr
    assert narrowed.stdout == fresh(tree, "--select", "BTN3").stdout
    plan = tree / PLAN_PATH
    single = baton(plan, cache)
    assert REPLAYED not in single.stderr and single.stdout == fresh(plan).stdout
    stored = [p for p in (cache / "v1" / "runs").glob("*.json")
              if not p.name.endswith(".more.json")]
    assert len(stored) == 3  # the whole tree, narrowed to BTN3xx, and one file


def test_a_damaged_or_expired_replay_is_a_check(tree: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    settle(tree, cache)
    runs = cache / "v1" / "runs"
    (stored,) = (p for p in runs.glob("*.json") if not p.name.endswith(".more.json"))
    raw = json.loads(stored.read_text())
    raw["expires"] = 1.0  # a finding judged against the clock has turned
    stored.write_text(json.dumps(raw))
    same_as_fresh(tree, cache)
    for junk in (b"{", b"\xff\xfe", b"[]", json.dumps({**raw, "paths": 3}).encode()):
        stored.write_bytes(junk)
        same_as_fresh(tree, cache)
    # The details of a partial replay: damaged, or of another check, they are not used.
    (details,) = runs.glob("*.more.json")
    agent = tree / ".claude/agents/research-specialist.md"

    def dumps(data: object) -> bytes:
        return json.dumps(data).encode()

    for i, damage in enumerate((lambda d: b"{", lambda d: dumps({**d, "targets": [[0]]}),
                                lambda d: dumps({**d, "stats": [1, 2]}),
                                lambda d: dumps({**d, "signature": "other"}))):
        settle(tree, cache)
        details.write_bytes(damage(json.loads(details.read_text())))
        agent.write_text(AGENT + f"\nEdit {i}.\n")
        assert "files read something that changed" not in same_as_fresh(tree, cache).stderr
    # Findings that cannot be read back: the files are checked after all.
    settle(tree, cache)
    raw = json.loads(details.read_text())
    for row in raw["targets"]:
        row[5] = [["not", "a", "finding"]]
    details.write_text(json.dumps(raw))
    agent.write_text(AGENT + "\nEdit again.\n")
    assert "could not be read back" in same_as_fresh(tree, cache).stderr
    # A file judged against the clock, its time come: it alone is checked again.
    settle(tree, cache)
    raw = json.loads(details.read_text())
    (plan_row,) = [row for row in raw["targets"] if raw_path(stored, row[0]).endswith(".md")
                   and "plans" in raw_path(stored, row[0])]
    plan_row[6] = 1.0
    details.write_text(json.dumps(raw))
    main = json.loads(stored.read_text())
    stored.write_text(json.dumps({**main, "expires": 1.0}))
    out = same_as_fresh(tree, cache)
    assert "1 of 4 files read something that changed since the last identical check, or " \
        "were judged against the clock" in out.stderr


def raw_path(stored: Path, at: int) -> str:
    """The path a stored check's details number `at`."""
    main = json.loads(stored.read_text())
    return str(main["base"] + main["paths"][at])


def test_a_replay_needs_no_models(tree: Path, tmp_path: Path) -> None:
    """Only `stat`s: no pydantic, no parser, no rules are imported."""
    cache = tmp_path / "cache"
    settle(tree, cache)
    probe = ("import sys\nfrom baton_lsp.cli.main import main\n"
             "code = main(['check', sys.argv[1]])\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic' or "
             "m.startswith(('baton_lsp.model.base', 'baton_lsp.parse', 'baton_lsp.rules.base'))),"
             " file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(tree)], capture_output=True,
                         text=True, timeout=120, check=False,
                         env={**os.environ, "BATON_CACHE_DIR": str(cache)})
    assert out.stdout == fresh(tree).stdout
    assert out.stderr.strip() == "[]"


UNNEEDED = ("dataclasses", "inspect", "logging", "typing", "hashlib", "subprocess")
"""What a replay does without: together about 20 ms of a warm check that takes ~40."""


def test_a_replay_imports_only_what_it_needs(tree: Path, tmp_path: Path) -> None:
    """A replayed check imports none of `UNNEEDED` (whatever the interpreter loaded before
    `main` ran is not counted); a check that has to check imports what checking needs
    (`logging` only for a record: this tree's check logs none)."""
    cache = tmp_path / "cache"
    settle(tree, cache)
    probe = ("import sys\nbefore = set(sys.modules)\n"
             "from baton_lsp.cli.main import main\n"
             "code = main(['check', sys.argv[1]])\n"
             f"print(sorted(m for m in set(sys.modules) - before if m in {UNNEEDED!r}),"
             " file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe, str(tree)], capture_output=True,
                         text=True, timeout=120, check=False,
                         env={**os.environ, "BATON_CACHE_DIR": str(cache)})
    assert out.stdout == fresh(tree).stdout
    assert out.stderr.strip() == "[]"
    # Not replayed (a new cache): it checks, and imports what checking needs.
    out = subprocess.run([sys.executable, "-c", probe, str(tree)], capture_output=True,
                         text=True, timeout=120, check=False,
                         env={**os.environ, "BATON_CACHE_DIR": str(tmp_path / "other")})
    assert out.stdout == fresh(tree).stdout
    assert "dataclasses" in out.stderr and "logging" not in out.stderr


def test_a_warning_before_the_check_is_told_as_before(tree: Path, tmp_path: Path) -> None:
    """Logging is set up after the replay is tried, but before anything a check warns about:
    a cache directory that cannot be created is still one brief warning line."""
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    out = run_baton("check", str(tree), cache=blocker / "cache")
    assert out.stdout == fresh(tree).stdout
    assert out.stderr.startswith("baton: WARNING: cannot create the cache directory"), out.stderr


def request_for(path: Path) -> Request:
    return Request(paths=(str(path),), options=("test",), cwd=str(path))


def test_a_file_changed_while_being_checked_is_not_recorded(tree: Path,
                                                            tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "cache", strict=False)
    result = check_paths([tree], cache=cache)
    assert result.reads is not None
    assert str(tree / PLAN_PATH) in [t.path for t in result.reads.targets]
    (tree / REPORT_PATH).write_text("# Report, edited after the check read it\n")
    assert not record(cache.directory, request_for(tree), result.reads, "out", False,
                      strict=False)
    assert replay(cache.directory, request_for(tree)) is None


def test_a_run_store_is_watched_to_its_last_entry(tmp_path: Path) -> None:
    """A run store (checkpoints, locks) an input as a whole tree: a file added two levels
    down is a change."""
    store = tmp_path / "ws/.claude/data/checkpoints"
    (store / "wf_1").mkdir(parents=True)
    (store / "wf_1/001.json").write_text("{}")
    reads = Reads(time.time_ns(), targets=[Target(str(tmp_path / "ws/plan.md"), "plan",
                                                  str(tmp_path / "ws"), trees=[str(store)])])
    request = request_for(tmp_path)
    assert record(tmp_path / "cache", request, reads, "out\n", True, strict=False)
    got = replay(tmp_path / "cache", request)
    assert isinstance(got, Replayed) and (got.output, got.errors) == ("out\n", True)
    (store / "wf_1/002.json").write_text("{}")
    again = replay(tmp_path / "cache", request)
    assert not isinstance(again, Replayed)
    assert again is not None and [t.path for t in again.changed] == [str(tmp_path / "ws/plan.md")]


def test_only_the_most_recent_checks_are_kept(tmp_path: Path) -> None:
    from baton_lsp.rules import replay as module

    (tmp_path / "src").mkdir()
    reads = Reads(time.time_ns(), shape=[(str(tmp_path / "src"), "kind", "d")])
    for i in range(module.MAX_RUNS + 5):
        assert record(tmp_path / "cache", Request((str(i),), (), ""), reads, "", False,
                      strict=False)
    runs = tmp_path / "cache/v1/runs"
    assert len(list(runs.glob("*.more.json"))) == module.MAX_RUNS
    assert len(list(runs.glob("*.json"))) == 2 * module.MAX_RUNS
