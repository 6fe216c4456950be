"""Workflow classification at initialize: scope, research complexity and research topics.

Three sources, in order: what the user said (`--scope`, `--topic`, `--complexity`), a
classifier agent run through the configured runner (its `CLASSIFICATION_COMPLETE: {json}`
signal, validated here with the seeds' rules), and a deterministic keyword fallback. The
result goes into the 2.1 checkpoint's `state_machine.classification` before any research
runs, so a resume never re-classifies (a classifier is an LLM: asked twice, it may answer
differently and move every report path).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..model.checkpoint import Classification
from ..model.states import Scope
from ..runs import confine
from ..runs.checkpoint import guess_scope
from .layout import slugify

log = logging.getLogger(__name__)

SLUG = r"^[a-z0-9_]{1,50}$"
NEEDS_PLAN = (Scope.IMPLEMENT_ONLY, Scope.TEST_AND_DEBUG, Scope.RESEARCH_AND_REVISE)
_DEEP = re.compile(r"\b(comprehensive|thorough|in-depth|exhaustive|across the (whole|entire))\b",
                   re.I)
_SHALLOW = re.compile(r"\b(quick|simple|small|minor|tiny|trivial|typo)\b", re.I)


class ClassificationError(Exception):
    """The classifier's output is unusable; the message says which rule it broke."""


class TopicSpec(BaseModel):
    """One research topic as the seeds' LLM classifier must return it."""

    model_config = ConfigDict(extra="ignore")

    short_name: str = Field(min_length=1, max_length=120)
    detailed_description: str = Field(min_length=50, max_length=500)
    filename_slug: str = Field(pattern=SLUG)
    research_focus: str = Field(min_length=1, max_length=1000)


class ClassifierOutput(BaseModel):
    """`CLASSIFICATION_COMPLETE: {json}`: validated before anything trusts it."""

    model_config = ConfigDict(extra="ignore")

    workflow_type: Scope
    research_complexity: int = Field(ge=1, le=4)
    research_topics: list[TopicSpec]
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: str = ""

    @model_validator(mode="after")
    def _count(self) -> ClassifierOutput:
        if len(self.research_topics) != self.research_complexity:
            raise ValueError(f"research_topics has {len(self.research_topics)} topic(s) but "
                             f"research_complexity is {self.research_complexity}; the count "
                             "must equal the complexity")
        slugs = [t.filename_slug for t in self.research_topics]
        if len(set(slugs)) != len(slugs):
            raise ValueError(f"filename_slug values must be distinct, got {slugs}")
        return self


def _message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "classification"
        msg = err["msg"].removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}")
    return "; ".join(parts)


def parse_classifier_output(value: str | None) -> ClassifierOutput:
    """The JSON of a `CLASSIFICATION_COMPLETE:` signal, validated; ClassificationError says
    exactly what is wrong (missing, not JSON, which field broke which rule)."""
    if value is None:
        raise ClassificationError("the classifier printed no CLASSIFICATION_COMPLETE: {json} "
                                  "signal")
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise ClassificationError(f"CLASSIFICATION_COMPLETE is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ClassificationError("CLASSIFICATION_COMPLETE must carry a JSON object, got "
                                  f"{type(data).__name__}")
    try:
        return ClassifierOutput.model_validate(data)
    except ValidationError as exc:
        raise ClassificationError(f"invalid classification: {_message(exc)}") from None


def keyword_scope(description: str, has_plan: bool) -> Scope:
    """The scope when nobody named one: with a plan, revise or implement it; otherwise the
    real 1.3 → 2.0 migration's keyword guess."""
    if has_plan:
        return Scope.RESEARCH_AND_REVISE if re.search(r"\brevis", description, re.I) else \
            Scope.IMPLEMENT_ONLY
    return guess_scope(description)


def keyword_complexity(description: str) -> int:
    """2 (the engine's long-standing default) unless the wording asks for more or less."""
    if _DEEP.search(description):
        return 4
    if _SHALLOW.search(description):
        return 1
    return 2


def topic_spec(name: str, description: str) -> dict[str, Any]:
    """A full topic object for a topic known only by name (user-given or derived)."""
    short = re.sub(r"\s+", " ", name).strip()[:120] or "topic"
    context = re.sub(r"\s+", " ", description).strip()
    detail = f"Research {short} as it bears on the request: {context}"
    if len(detail) < 50:
        detail = (detail + " — current state, options, risks and recommendations.")[:500]
    if len(detail) > 500:
        detail = detail[:497].rstrip() + "…"
    return {"short_name": short, "detailed_description": detail,
            "filename_slug": slugify(short, 6, 48)[:50],
            "research_focus": f"Key questions: what exists today for {short}, what should "
                              "change, and what could go wrong?"}


def classification_record(*, scope: Scope, topics: list[dict[str, Any]], confidence: float,
                          reasoning: str, source: str, at: str) -> dict[str, Any]:
    """The 2.1 `state_machine.classification` block (plus where it came from)."""
    return {"workflow_type": scope.value, "research_complexity": max(1, len(topics)),
            "research_topics": topics, "confidence": confidence, "reasoning": reasoning,
            "classified_at": at, "source": source}


def _topics(classification: Classification | Mapping[str, Any]) -> list[dict[str, Any] | str]:
    """The research topics of a typed classification or of one still being built as JSON,
    each as JSON (an object, or a bare name as older files store them)."""
    if isinstance(classification, Classification):
        return [t if isinstance(t, str) else t.model_dump(mode="json", exclude_unset=True)
                for t in classification.research_topics]
    found = classification.get("research_topics") or []
    return [t for t in found if isinstance(t, dict | str)]


def topic_names(classification: Classification | Mapping[str, Any]) -> list[str]:
    out = []
    for t in _topics(classification):
        out.append(t.get("short_name") or "topic" if isinstance(t, dict) else str(t))
    return out


def topic_slugs(classification: Classification | Mapping[str, Any]) -> list[str]:
    out = []
    for t in _topics(classification):
        slug = t.get("filename_slug") if isinstance(t, dict) else None
        out.append(slug if slug and re.match(SLUG, slug) else slugify(
            t.get("short_name", "") if isinstance(t, dict) else str(t), 6, 48))
    return out


def read_state_file(root: Path, path: Path) -> dict[str, str]:
    """`export KEY="value"` lines of a state file, unescaped (last one wins, as when
    sourced); multi-line values are joined. Unreadable → {}; so is a name a repository
    planted (a link out of the workspace `root`, a FIFO), which `confine` refuses to read."""
    try:
        text = confine.read_bytes(root, path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        log.warning("not reading the state file: %s", confine.describe(exc))
        return {}
    out: dict[str, str] = {}
    for m in _ASSIGN.finditer(text):
        raw = m.group(2) if m.group(2) is not None else m.group(3)
        out[m.group(1)] = re.sub(r"\\(.)", r"\1", raw, flags=re.S) if m.group(2) is not None \
            else raw
    return out


_ASSIGN = re.compile(r'^(?:export\s+)?([A-Z_][A-Z0-9_]*)=(?:"((?:[^"\\]|\\.)*)"|(\S*))',
                     re.M | re.S)


def mismatches(classification: Classification, values: dict[str, str]
               ) -> list[tuple[str, str, str]]:
    """(key, state-file value, checkpoint value) for every classification field the state
    file records differently."""
    out = []
    scope = classification.workflow_type.value
    if "WORKFLOW_SCOPE" in values and values["WORKFLOW_SCOPE"] != scope:
        out.append(("WORKFLOW_SCOPE", values["WORKFLOW_SCOPE"], scope))
    complexity = str(classification.research_complexity)
    if "RESEARCH_COMPLEXITY" in values and values["RESEARCH_COMPLEXITY"] != complexity:
        out.append(("RESEARCH_COMPLEXITY", values["RESEARCH_COMPLEXITY"], complexity))
    if "RESEARCH_TOPICS_JSON" in values:
        try:
            theirs = json.loads(values["RESEARCH_TOPICS_JSON"])
        except ValueError:
            theirs = None
        ours = _topics(classification)
        if not isinstance(theirs, list) or topic_slugs({"research_topics": theirs}) != \
                topic_slugs(classification):
            out.append(("RESEARCH_TOPICS_JSON", ",".join(topic_slugs(
                {"research_topics": theirs})) if isinstance(theirs, list) else "unreadable",
                ",".join(topic_slugs({"research_topics": ours}))))
    return out
