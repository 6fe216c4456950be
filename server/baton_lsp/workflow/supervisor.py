"""The research supervisor tier: metadata from worker reports, the supervisor checkpoint,
and the planning-only coordinator's invocation plan.

Four or more research topics go through a supervisor: workers write full reports, the
supervisor keeps only each report's title, frontmatter counts, first summary paragraph and
key findings, and passes that aggregate up (the seeds' metadata-only passing). The section
recorded in the checkpoint has the shape of the real `SUPERVISOR_CHECKPOINT.json`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..runs import confine
from ..runs.places import tmp_json_path
from ..runs.record import (
    IMPLEMENTATION_SUPERVISOR,
    RESEARCH_SUPERVISOR,
    TESTING_SUPERVISOR,
    ResearchSupervisor,
    SupervisorState,
    SupervisorTier,
)

SUMMARY_HEADINGS = re.compile(r"^(executive summary|summary|overview|abstract|tl;?dr)\b", re.I)
FINDINGS_HEADINGS = re.compile(r"^(key findings|findings|results|recommendations?)\b", re.I)
MAX_FINDINGS = 5
MAX_FINDING = 120
MAX_SUMMARY = 400
SUPERVISOR_METADATA = "supervisor_metadata"
"""`.claude/tmp/supervisor_metadata.json`: seed 001's SUPERVISOR_COMPLETE payload, named by
SUPERVISOR_METADATA_PATH."""
MAX_REPORT = 1 << 24
"""Bytes of a report read for its metadata at most."""
_META_BULLET = re.compile(r"^\s*[-*]\s+\*\*([^*]+)\*\*:\s*(.+)$")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(.+)$")


def _frontmatter(lines: list[str]) -> tuple[dict[str, Any], int]:
    """Flat `key: value` pairs of a leading YAML block (counts such as findings_count)."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    out: dict[str, Any] = {}
    for i, line in enumerate(lines[1:], 1):
        if line.strip() in ("---", "..."):
            return out, i + 1
        key, sep, value = line.partition(":")
        if sep and key.strip() and not key.startswith((" ", "\t", "-")):
            v = value.strip().strip("'\"")
            out[key.strip()] = int(v) if re.fullmatch(r"-?\d+", v) else v
    return {}, 0


def _clip(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def extract_metadata(path: Path) -> dict[str, Any]:
    """Title, frontmatter counts, the `## Metadata` bullets (date, agent, topic), the first
    summary paragraph and up to five key findings of one report — never the report."""
    try:  # an artifact past its barrier; still never a FIFO waited on, nor read unbounded
        text = confine.read_regular(path, MAX_REPORT).decode("utf-8", errors="replace")
    except OSError:
        return {}
    lines = text.splitlines()
    front, start = _frontmatter(lines)
    meta: dict[str, Any] = {}
    for key in ("title", "date", "agent", "topic", "report_type", "artifact_type"):
        if isinstance(front.get(key), str):
            meta[key] = _clip(front[key], 160)
    for key, value in front.items():
        if key.endswith("_count") and isinstance(value, int):
            meta[key] = value
    section, summary = "", ""
    para: list[str] = []
    findings: list[str] = []
    for line in lines[start:]:
        stripped = line.strip()
        if stripped.startswith("# ") and "title" not in meta:
            meta["title"] = _clip(re.sub(r"^(research report|report):\s*", "",
                                         stripped[2:], flags=re.I), 160)
            continue
        if stripped.startswith("#"):
            if para and not summary and SUMMARY_HEADINGS.match(section):
                summary = " ".join(para)
            section, para = stripped.lstrip("#").strip(), []
            continue
        m = _META_BULLET.match(line)
        if m and section.lower() == "metadata":
            key = m.group(1).strip().lower().replace(" ", "_")
            if key in ("date", "agent", "topic", "report_type") and key not in meta:
                meta[key] = _clip(m.group(2), 160)
            continue
        if SUMMARY_HEADINGS.match(section) and not summary:
            if stripped:
                para.append(stripped)
            elif para:
                summary = " ".join(para)
        if FINDINGS_HEADINGS.match(section) and len(findings) < MAX_FINDINGS:
            item = _ITEM.match(line)
            if item and not line.startswith((" ", "\t")):
                findings.append(_clip(item.group(1).replace("**", ""), MAX_FINDING))
    if para and not summary and SUMMARY_HEADINGS.match(section):
        summary = " ".join(para)
    meta["summary"] = _clip(summary, MAX_SUMMARY) if summary else ""
    meta["key_findings"] = findings
    return meta


def supervisor_section(*, supervisor_id: str, mode: str, at: str,
                       workers: list[dict[str, Any]], total_ms: int | None = None
                       ) -> ResearchSupervisor:
    """The supervisor checkpoint: workers and the aggregate the supervisor passes up, in
    seed 001's shape (`worker_status`, `aggregated_metadata.topics_researched`; the count
    also at the top, SUPERVISOR_COMPLETE's place, for `.research_supervisor.topics_researched`)
    with the real SUPERVISOR_CHECKPOINT.json's `reports_count` beside it. `total_ms` when the
    workers' own durations are unknown (an agent ran them)."""
    done = [w for w in workers if w.get("status") == "completed"]
    key_findings: list[str] = []
    for w in done:
        for f in (w.get("metadata") or {}).get("key_findings", [])[:2]:
            key_findings.append(f)
    summary = " ".join(f"{(w.get('metadata') or {}).get('title') or w['topic']}: "
                       f"{_clip((w.get('metadata') or {}).get('summary') or '', 160)}"
                       for w in done)
    counts: dict[str, int] = {}
    for w in done:
        for k, v in (w.get("metadata") or {}).items():
            if k.endswith("_count") and isinstance(v, int):
                counts["total_" + k.removesuffix("_count")] = \
                    counts.get("total_" + k.removesuffix("_count"), 0) + v
    return ResearchSupervisor.model_validate({
        "supervisor_id": supervisor_id, "supervisor_name": f"research-{mode}", "mode": mode,
        "timestamp": at, "worker_count": len(workers),
        "worker_status": [str(w.get("status")) for w in workers], "workers": workers,
        "topics_researched": len(done),
        "aggregated_metadata": {
            "topics_researched": len(done), "reports_count": len(done),
            "reports_created": [w["output_path"] for w in done],
            "reports_failed": [w["output_path"] for w in workers if w not in done],
            "summary": _clip(summary, 1200), "key_findings": key_findings[:10],
            "total_duration_ms": total_ms if total_ms is not None else sum(
                int(w.get("duration_ms") or 0) for w in workers),
            "context_tokens": sum(int(w.get("context_tokens") or 0) for w in done),
            **counts}})


def write_json(root: Path, path: Path, data: Mapping[str, object]) -> None:
    """One JSON file the bash side reads, written atomically inside the workspace."""
    confine.write_atomic(root, path,
                         (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())


def write_tmp(root: Path, name: str, data: Mapping[str, object]) -> None:
    """`write_json` to `.claude/tmp/<name>.json`, that directory made as Baton's own (it
    ignores itself in git when Baton creates it)."""
    path = tmp_json_path(root, name)
    confine.makedirs_own(root, path.parent)
    write_json(root, path, data)


def section_json(section: SupervisorTier) -> dict[str, object]:
    """A tier's section as the checkpoint and the bash side's files have it."""
    return section.model_dump(mode="json", exclude_unset=True)


def record_section(root: Path, tier: str, section: SupervisorTier) -> None:
    """`.claude/tmp/<tier>.json`, where the seeds' `load_json_checkpoint "<tier>"` reads a
    supervisor tier's section (the caller holds it in `Run.supervisor_state.<tier>`)."""
    write_tmp(root, tier, section_json(section))


def handoff(section: ResearchSupervisor) -> dict[str, object]:
    """What the research supervisor returns to the orchestrator (seed 001's
    `SUPERVISOR_COMPLETE: {supervisor_id, topics_researched, reports_created, summary,
    key_findings}`): the aggregate, never the reports."""
    agg = section.aggregated_metadata
    return {"supervisor_id": section.supervisor_id,
            "topics_researched": agg.topics_researched,
            "reports_created": agg.reports_created if "reports_created" in
            agg.model_fields_set else None,
            "summary": agg.summary,
            "key_findings": agg.key_findings if "key_findings" in agg.model_fields_set
            else None}


def publish_research(root: Path, section: ResearchSupervisor) -> None:
    """The research aggregate where SUPERVISOR_METADATA_PATH points."""
    write_tmp(root, SUPERVISOR_METADATA, handoff(section))


def republish(root: Path, state: SupervisorState) -> None:
    """A resumed run's supervisor files as its checkpoint has them: they have one name per
    workspace (the seeds'), and another workflow may have written its own since."""
    for tier, section in ((RESEARCH_SUPERVISOR, state.research_supervisor),
                          (IMPLEMENTATION_SUPERVISOR, state.implementation_supervisor),
                          (TESTING_SUPERVISOR, state.testing_supervisor)):
        if section is not None:
            write_tmp(root, tier, section_json(section))
    for tier, found in (state.model_extra or {}).items():  # a tier this Baton does not know
        if isinstance(found, dict):
            write_tmp(root, tier, found)
    if state.research_supervisor is not None:
        publish_research(root, state.research_supervisor)


def check_invocation_plan(count: str | None, invocations: str | None, topics: list[str],
                          reports: list[str]) -> tuple[list[tuple[str, str]] | None, str | None]:
    """The planning-only coordinator's `INVOCATION_PLAN_READY: N` + `invocations: [...]`,
    checked against the orchestrator's own topics and pre-calculated paths. Returns the
    (topic, report_path) pairs in the coordinator's order, or the problem."""
    if count is None:
        return None, "the coordinator printed no INVOCATION_PLAN_READY: N signal"
    if not count.strip().isdigit() or int(count) != len(topics):
        return None, (f"INVOCATION_PLAN_READY says {count.strip()!r}; {len(topics)} "
                      "invocations were expected (one per topic)")
    if invocations is None:
        return None, "the coordinator printed no `invocations: [...]` list"
    try:
        items = json.loads(invocations)
    except ValueError as exc:
        return None, f"`invocations` is not valid JSON: {exc}"
    if not isinstance(items, list) or len(items) != len(topics):
        return None, (f"`invocations` lists {len(items) if isinstance(items, list) else 0} "
                      f"item(s); {len(topics)} expected")
    expected = dict(zip(reports, topics, strict=True))
    out: list[tuple[str, str]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("report_path"), str):
            return None, f"invocation {i + 1} has no report_path"
        path = item["report_path"]
        if path not in expected:
            return None, (f"invocation {i + 1} writes {path}, which is not one of the "
                          "pre-calculated report paths (the orchestrator owns the paths)")
        if any(path == p for _, p in out):
            return None, f"invocation {i + 1} repeats {path}"
        out.append((expected[path], path))
    return out, None
