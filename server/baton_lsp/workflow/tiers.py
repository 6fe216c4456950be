"""The implementation and testing sub-supervisors (seed 001, Phase 6; seed 004's
implementer- and testing-coordinator), beside the research supervisor of `supervisor.py`.

The seeds decide per workflow whether a tier is hierarchical: implementation when the plan
spans three or more domains (frontend, backend, testing, told apart by file paths) or its
complexity reaches 10; testing when there are twenty or more tests or two or more test
types. Baton's supervisors run no agents of their own — the engine already runs the
phases in parallel waves and the test command itself — they are the coordination record:
work tracked by domain or by stage, each worker's artifact reduced to its metadata
(`supervisor.extract_metadata`, metadata-only passing) with its context account, and the
section checkpointed under `supervisor_state.<tier>` and in `.claude/tmp/<tier>.json`
(`supervisor.record_section`), as the research tier does.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..model.plan import Plan
from ..model.states import StepStatus
from ..runs import confine
from ..runs.record import ImplementationSupervisor, StepRecord, TestingSupervisor

DOMAINS = ("frontend", "backend", "testing")
HIERARCHICAL_DOMAINS = 3
HIERARCHICAL_COMPLEXITY = 10
HIERARCHICAL_TESTS = 20
HIERARCHICAL_TEST_TYPES = 2

_DOMAIN_PATTERNS = (  # first match wins: a test of the API is testing work, not backend
    ("testing", re.compile(
        r"(^|/)(tests?|__tests__|specs?|e2e|cypress|playwright)/|(^|/)test_[^/]*$"
        r"|_test\.\w+$|\.(test|spec)\.\w+$|(^|/)conftest\.py$", re.I)),
    ("frontend", re.compile(
        r"(^|/)(frontend|client|web|ui|components|pages|views|public|static|styles|assets)/"
        r"|\.(tsx|jsx|vue|svelte|css|scss|sass|less|html?)$", re.I)),
    ("backend", re.compile(
        r"(^|/)(backend|server|api|services?|models?|db|database|migrations|handlers"
        r"|controllers|routes|internal|cmd)/|\.(py|go|rs|java|rb|php|sql|cs|kt|exs?)$",
        re.I)),
)
_EXTENSIONS = ("py", "ts", "tsx", "js", "jsx", "mjs", "vue", "svelte", "css", "scss", "sass",
               "less", "html", "htm", "go", "rs", "java", "rb", "php", "sql", "cs", "kt", "ex",
               "exs", "sh", "bats")
_TOKEN = re.compile(r"`([^`\n]+)`|([^\s`'\"()\[\]<>,;|*]+)")
_HAS_EXTENSION = re.compile(r"\.(" + "|".join(_EXTENSIONS) + r")$", re.I)


def domain_of(path: str) -> str | None:
    """The domain a file path belongs to (frontend, backend, testing), None for others."""
    for name, pattern in _DOMAIN_PATTERNS:
        if pattern.search(path):
            return name
    return None


def paths_in(text: str) -> list[str]:
    """The file paths a plan section names (`src/api/auth.py`, `tests/`, Login.tsx): a
    quoted token with a directory or a source extension; a bare one with an extension, a
    trailing slash or two directories (so prose such as "and/or" or "frontend/backend" is
    not a path); URLs left out; in order, once each."""
    out: list[str] = []
    for quoted, bare in _TOKEN.findall(text):
        token = (quoted or bare).strip().rstrip(".:")
        if "://" in token or token.startswith("www.") or len(token) < 3 or " " in token:
            continue
        if not re.search(r"[A-Za-z]", token):
            continue
        named = bool(_HAS_EXTENSION.search(token)) or (
            "/" in token if quoted else token.endswith("/") or token.count("/") >= 2)
        if named and token not in out:
            out.append(token)
    return out


def complexity_of(plan: Plan, pids: Iterable[str]) -> tuple[int, str]:
    """The plan's complexity and where it came from: its metadata's numeric `Complexity
    Score` (or `Complexity`), as plan-architect writes it; else the tasks of its phases."""
    for key in ("Complexity Score", "Complexity"):
        entry = plan.meta(key)
        found = re.match(r"\s*(\d+(?:\.\d+)?)", entry.value) if entry is not None else None
        if found:
            return int(float(found.group(1))), f"metadata {key}"
    wanted = set(pids)
    return sum(len(p.tasks) for p in plan.phases if p.id in wanted), "tasks"


def implementation_decision(plan: Plan, sections: dict[str, str], order: list[str]
                            ) -> dict[str, Any]:
    """Seed 001's rule for the implementation tier — hierarchical when `domain_count ≥ 3`
    or `complexity ≥ 10` — with the tracks it found: each phase's domains from the file
    paths its section names (stateless: recalculated from the plan on every run)."""
    files = {pid: paths_in(sections.get(pid, "")) for pid in order}
    phase_tracks = {pid: sorted({d for f in fs if (d := domain_of(f))},
                                key=DOMAINS.index) for pid, fs in files.items()}
    tracks = {d: [pid for pid in order if d in phase_tracks[pid]] for d in DOMAINS}
    tracks = {d: pids for d, pids in tracks.items() if pids}
    complexity, source = complexity_of(plan, order)
    return {"hierarchical": len(tracks) >= HIERARCHICAL_DOMAINS
            or complexity >= HIERARCHICAL_COMPLEXITY,
            "domain_count": len(tracks), "complexity": complexity,
            "complexity_source": source,
            "thresholds": {"domain_count": HIERARCHICAL_DOMAINS,
                           "complexity": HIERARCHICAL_COMPLEXITY},
            "tracks": tracks, "phase_tracks": phase_tracks, "phase_files": files}


SEED_WORKER_STATUS: dict[str, str] = {
    StepStatus.DONE: "completed", StepStatus.FAILED: "failed",
    StepStatus.RUNNING: "running", StepStatus.CANCELLED: "cancelled"}
"""A step's status as seed 001's `worker_status` words it (anything else: `pending`)."""


def _status(step: StepRecord | None) -> str:
    return SEED_WORKER_STATUS.get(str(step.status) if step is not None else "", "pending")


def _clip(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def implementation_section(*, supervisor_id: str, at: str, decision: dict[str, Any],
                           steps: Mapping[str, StepRecord], titles: dict[str, str],
                           order: list[str], wall_ms: int,
                           modified: dict[str, list[str]]) -> ImplementationSupervisor:
    """The implementation supervisor's checkpoint: one worker per phase (its tracks, status,
    summary's metadata and the files it changed — from git when the phase committed, else
    the files its section names), per track the seeds' `files_modified`, duration and
    status, and the aggregate with the time parallel waves saved over running the phases
    one after another."""
    workers: list[dict[str, Any]] = []
    for pid in order:
        sid = f"implement.phase-{pid}"
        step = steps.get(sid)
        w: dict[str, Any] = {
            "worker_id": sid, "phase": pid, "title": titles.get(pid, ""),
            "tracks": decision["phase_tracks"].get(pid, []), "status": _status(step),
            "output_path": step.artifact if step is not None else None,
            "duration_ms": step.duration_ms if step is not None else None,
            "files_planned": decision["phase_files"].get(pid, [])}
        if pid in modified:
            w["files_modified"] = modified[pid]
        if step is not None and step.done:
            w["metadata"] = step.metadata or {}
            w["context_tokens"] = (step.context or {}).get("passed_tokens", 0)
        elif step is not None and step.message:
            w["error"] = step.message
        workers.append(w)
    tracks: dict[str, dict[str, Any]] = {}
    for domain, pids in decision["tracks"].items():
        mine = [w for w in workers if w["phase"] in pids]
        statuses = {w["status"] for w in mine}
        files = sorted({f for w in mine for f in w.get("files_modified", w["files_planned"])
                        if domain_of(f) == domain})
        tracks[domain] = {
            "phases": pids, "files_modified": files,
            "duration_ms": sum(int(w.get("duration_ms") or 0) for w in mine),
            "status": "completed" if statuses == {"completed"} else "failed"
            if "failed" in statuses else "in_progress" if "completed" in statuses
            else "pending"}
    done = [w for w in workers if w["status"] == "completed"]
    sequential = sum(int(w.get("duration_ms") or 0) for w in done)
    summary = " ".join(f"Phase {w['phase']} ({', '.join(w['tracks']) or 'no track'}): "
                       f"{_clip((w.get('metadata') or {}).get('summary') or '', 120)}"
                       for w in done)
    findings = [f for w in done for f in (w.get("metadata") or {}).get("key_findings", [])[:2]]
    return ImplementationSupervisor.model_validate({
        "supervisor_id": supervisor_id, "supervisor_name": "implementation-sub-supervisor",
        "mode": "supervisor", "timestamp": at, "trigger": {
            k: decision[k] for k in ("domain_count", "complexity", "complexity_source",
                                     "thresholds")},
        "worker_count": len(workers), "worker_status": [w["status"] for w in workers],
        "tracks": tracks, "workers": workers,
        "aggregated_metadata": {
            "tracks_completed": [d for d, t in tracks.items() if t["status"] == "completed"],
            "phases_completed": [w["phase"] for w in done],
            "summaries_created": [w["output_path"] for w in done],
            "files_modified": sorted({f for w in done for f in w.get("files_modified", [])}),
            "summary": _clip(summary, 1200), "key_findings": findings[:10],
            "total_duration_ms": wall_ms, "sequential_duration_ms": sequential,
            "time_savings_pct": round(100.0 * (1 - wall_ms / sequential), 1)
            if sequential > wall_ms > 0 else None,
            "context_tokens": sum(int(w.get("context_tokens") or 0) for w in done)}})


# -- testing -------------------------------------------------------------------------------

TEST_TYPES = ("unit", "integration", "e2e")
_TEST_FILE = re.compile(r"(^|/)test_[^/]+\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$"
                        r"|\.bats$|(^|/)__tests__/[^/]+\.[cm]?[jt]sx?$")
_TEST_CASE = re.compile(r"^\s*(?:async\s+)?def\s+test\w*\s*\(|^\s*(?:it|test)\s*\(\s*['\"`]"
                        r"|^\s*func\s+Test\w*\s*\(|^\s*@test\s", re.M)
_SKIP_DIRS = {".git", ".hg", ".svn", ".claude", "node_modules", ".venv", "venv", "__pycache__",
              "dist", "build", "target", ".tox", ".mypy_cache", ".pytest_cache", "site-packages"}
MAX_TEST_FILES = 2000
MAX_WALKED = 200_000
"""Directory entries looked at for test files, at most (the test state does this each time)."""
MAX_TEST_FILE = 1 << 20
"""Bytes of one test file read to count its tests, at most."""


def test_type(path: str) -> str:
    """unit, integration or e2e, from where a test file is."""
    low = path.lower()
    if re.search(r"(^|/)(e2e|cypress|playwright|end[-_]to[-_]end)(/|$)|\.e2e\.", low):
        return "e2e"
    if re.search(r"(^|/)(integration|integration[-_]tests?|it)(/|$)|integration", low):
        return "integration"
    return "unit"


def test_inventory(root: Path) -> dict[str, Any]:
    """The generation stage's account: the workspace's test files by type and the tests
    in them (counted by their definitions: `def test_…`, `it(`/`test(`, `func Test…`,
    bats `@test`), hidden directories, dependencies and build output left out."""
    by_type: dict[str, dict[str, int]] = {}
    files = seen = 0
    for top, dirs, names in os.walk(root):
        seen += len(names) + len(dirs)
        if seen > MAX_WALKED:
            break  # a giant tree: what was found so far decides
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(names):
            rel = os.path.relpath(os.path.join(top, name), root).replace(os.sep, "/")
            if not _TEST_FILE.search(rel) or files >= MAX_TEST_FILES:
                continue
            try:
                text = confine.read_head(root, Path(top) / name, MAX_TEST_FILE)[0].decode(
                    "utf-8", "replace")
            except OSError:
                continue  # a link out of the workspace, a FIFO: not read, not counted
            files += 1
            row = by_type.setdefault(test_type(rel), {"files": 0, "tests": 0})
            row["files"] += 1
            row["tests"] += len(_TEST_CASE.findall(text))
    return {"test_files": files, "total_tests": sum(r["tests"] for r in by_type.values()),
            "test_types": sorted(by_type, key=TEST_TYPES.index), "by_type": by_type}


def testing_decision(inventory: dict[str, Any]) -> dict[str, Any]:
    """Seed 001's rule for the testing tier: `test_count ≥ 20` or `test_types ≥ 2`."""
    return {"hierarchical": inventory["total_tests"] >= HIERARCHICAL_TESTS
            or len(inventory["test_types"]) >= HIERARCHICAL_TEST_TYPES,
            "test_count": inventory["total_tests"], "test_types": len(inventory["test_types"]),
            "thresholds": {"test_count": HIERARCHICAL_TESTS,
                           "test_types": HIERARCHICAL_TEST_TYPES}}


_COUNT = re.compile(r"(\d+)\s+(passed|failed|errors?|skipped|xfailed|xpassed)\b", re.I)
_JEST = re.compile(r"^Tests:\s+(.*?)(\d+)\s+total", re.M)
_COVERAGE = re.compile(r"^(?:TOTAL\s.*?|.*coverage[^0-9\n]*?)(\d+(?:\.\d+)?)%", re.I | re.M)
_FAILURE = re.compile(r"^(?:FAILED|FAIL|ERROR)[: ]\s*(\S.*)$", re.M)


def test_metrics(output: str) -> dict[str, Any]:
    """What the execution reported, read from its output (pytest's and jest's summary
    lines, a coverage total): counts, coverage and the first failures — the metadata the
    supervisor passes up instead of the log."""
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(output):
        key = {"error": "errors", "errors": "errors"}.get(word.lower(), word.lower())
        counts[key] = int(number)  # the last summary line wins
    out: dict[str, Any] = {k: counts.get(k, 0) for k in ("passed", "failed", "skipped")}
    out["failed"] += counts.get("errors", 0)
    jest = _JEST.findall(output)
    total = int(jest[-1][1]) if jest else sum(out.values())
    out["total_tests"] = total
    coverage = _COVERAGE.findall(output)
    out["coverage_pct"] = float(coverage[-1]) if coverage else None
    out["failures"] = [_clip(f, 200) for f in _FAILURE.findall(output)][:10]
    return out


def testing_section(*, supervisor_id: str, at: str, decision: dict[str, Any],
                    inventory: dict[str, Any], step_id: str, exit_code: int | None,
                    passed: bool, duration_ms: int, output_path: str,
                    metrics: dict[str, Any], context_tokens: int,
                    from_implementation: list[str]) -> TestingSupervisor:
    """The testing supervisor's checkpoint: the three sequential stages — generation (the
    tests there are, by type, and those this workflow's phases wrote), execution (the test
    command), validation (the verdict from the metrics) — and the aggregate passed up."""
    stages = [
        {"stage": "generation", "status": "completed", "test_files": inventory["test_files"],
         "by_type": inventory["by_type"], "from_implementation": from_implementation},
        {"stage": "execution", "status": "completed" if exit_code is not None else "failed",
         "worker_id": step_id, "exit_code": exit_code, "duration_ms": duration_ms,
         "output_path": output_path},
        {"stage": "validation", "status": "completed",
         "verdict": "passed" if passed else "failed"}]
    return TestingSupervisor.model_validate({
        "supervisor_id": supervisor_id, "supervisor_name": "testing-sub-supervisor",
        "mode": "supervisor", "timestamp": at, "trigger": {
            k: decision[k] for k in ("test_count", "test_types", "thresholds")},
        "worker_count": len(stages), "worker_status": [s["status"] for s in stages],
        "stages": stages,
        "aggregated_metadata": {
            "total_tests": metrics["total_tests"] or inventory["total_tests"],
            "tests_found": inventory["total_tests"], "passed": metrics["passed"],
            "failed": metrics["failed"], "skipped": metrics["skipped"],
            "coverage_pct": metrics["coverage_pct"], "test_types": inventory["test_types"],
            "failures": metrics["failures"], "tests_passing": passed,
            "context_tokens": context_tokens}})
