"""The initialize state: classify the request (keywords, the user's flags, or a classifier
agent), then pre-calculate every path — topic directory, report, plan and summary paths —
before any other agent runs."""

from __future__ import annotations

import json
from pathlib import Path

from ...model.checkpoint import Classification
from ...model.states import Scope, State
from ...runs import confine
from ...runs.record import ClassifyRecord, StepRecord
from ...runs.records import utc_now
from .. import classify
from ..agent_step import StepSpec, agent_step
from ..failures import FATAL, StepFailure
from ..isolation import Isolation
from ..layout import AGENT_SCRATCH, allocate_topic, run_paths, topic_of_plan
from ..run import Run
from ..signals import SignalReader
from ..state_machine import HAPPY_PATHS, WorkflowStateMachine
from .base import StateHandler


async def initialize(run: Run) -> None:
    """Classify (when a classifier agent is configured), save the classification, then
    pre-calculate every path before any other agent runs."""
    req = run.request
    cls_state = run.classify
    if cls_state is None:  # a record from before it: written now, in its place
        cls_state = run.classify = ClassifyRecord(agent=False, done=True)
    if not cls_state.done:
        try:
            await classify_with_agent(run)
        except StepFailure as exc:
            if exc.failure == FATAL:
                raise  # the environment is broken: every later agent would fail too
            # The keyword classification made at start stays; say why it is used.
            record = run.state_machine.classification
            record.source = "keyword, after the classifier agent failed"
            record.reasoning = f"classifier agent failed: {exc.message[:300]}"
            run.say(f"classifier agent failed ({exc.message[:200]}); using the keyword "
                    "classification")
            run.emit("classifier_fallback", message=exc.message)
        cls_state.done = True
    classification = run.state_machine.classification
    if not cls_state.announced:
        cls_state.announced = True
        run.say(f"classified ({classification.source}): "
                f"{classification.workflow_type.value}, "
                f"{classification.research_complexity} research topic(s): "
                + "; ".join(classify.topic_names(classification)))
        run.save("classified")
        run.emit("classification", source=classification.source,
                 scope=classification.workflow_type.value,
                 complexity=classification.research_complexity,
                 topics=classify.topic_names(classification),
                 confidence=classification.confidence)
    if run.topic is None:
        base = run.specs_dir()
        if req.plan_path:
            run.topic = topic_of_plan(run.root, Path(req.plan_path), base)
        else:
            run.topic = allocate_topic(run.root, req.description, base)
    t = run.topic
    run.paths = run.paths.model_copy(update=run_paths(
        run.root, t, classify.topic_slugs(classification), req.plan_path))
    plan = run.paths.plan
    ws = run.workflow_state
    ws.topic_directory, ws.topic_number, ws.plan_path = str(t.path), t.number, plan
    run.topic_directory, run.topic_number = str(t.path), t.number
    run.say(f"workflow {run.workflow_id}: topic {t.path.relative_to(run.root)}")
    run.save("paths pre-calculated")
    if State.IMPLEMENT in HAPPY_PATHS[run.machine.scope]:
        iso = Isolation.of(run)  # refuse a dirty tree before any agent is paid for
        if iso is not None:
            iso.require_clean("initialize")


async def classify_with_agent(run: Run) -> None:
    """The classifier agent's `CLASSIFICATION_COMPLETE: {json}`, validated (a broken
    answer is a permanent failure naming the rule), merged under what the user said."""
    req = run.request
    explicit = run.classify.explicit if run.classify is not None else {}
    artifact = (run.specs_dir() / AGENT_SCRATCH /
                f"classification_{run.workflow_id}.json")
    parsed: list[classify.ClassifierOutput] = []

    def verify(path: Path, reader: SignalReader) -> str | None:
        sig = reader.first("CLASSIFICATION_COMPLETE")
        try:
            out = classify.parse_classifier_output(sig.value if sig else None)
        except classify.ClassificationError as exc:
            return f"classifier: {exc}"
        if explicit.get("complexity") and out.research_complexity != req.complexity:
            return (f"classifier: returned {out.research_complexity} topic(s) but "
                    f"--complexity asked for {req.complexity}")
        scope = Scope(req.scope) if explicit.get("scope") and req.scope \
            else out.workflow_type
        if (scope in classify.NEEDS_PLAN) != bool(req.plan_path):
            return (f"classifier: scope {scope.value} " + (
                "works on an existing plan, and no --plan was given" if scope in classify.NEEDS_PLAN
                else "does not use the --plan that was given") + "; pass --scope")
        parsed.append(out)
        return None

    extra = {"BATON_SCOPE": (req.scope or "") if explicit.get("scope") else "",
             "BATON_RESEARCH_COMPLEXITY": str(req.complexity)
             if explicit.get("complexity") else "",
             "BATON_TOPICS_JSON": json.dumps(req.topics) if explicit.get("topics") else "",
             "BATON_PLAN_PATH": req.plan_path or ""}
    confine.makedirs_own(run.root, artifact.parent)
    done = run.steps.get("classify")
    if done is not None and done.done and done.classification is None:
        run.steps.pop("classify")  # recorded by an older Baton without its answer

    def answer(step: StepRecord) -> None:
        step.classification = parsed[-1].model_dump(mode="json")

    await agent_step(run, StepSpec("classify", State.INITIALIZE, "classifier", artifact, extra,
                                   verify=verify, fields=answer))
    out = classify.ClassifierOutput.model_validate(run.steps["classify"].classification)
    scope = Scope(req.scope) if explicit.get("scope") and req.scope \
        else out.workflow_type
    topics = [t.model_dump() for t in out.research_topics]
    if explicit.get("topics"):
        topics = [classify.topic_spec(t, req.description) for t in req.topics]
    record = classify.classification_record(
        scope=scope, topics=topics, confidence=out.confidence,
        reasoning=out.reasoning or "classifier agent", source="agent", at=utc_now())
    classification = run.state_machine.classification = Classification.model_validate(record)
    req.scope, req.topics = scope.value, classify.topic_names(classification)
    req.complexity = len(topics)
    run.workflow_type = scope.value
    run.state_machine.workflow_config.scope = scope
    if scope != run.machine.scope:
        history = run.machine.history
        run.sm = WorkflowStateMachine(scope)
        run.sm.history = history


def first_state(run: Run) -> State:
    return HAPPY_PATHS[run.machine.scope][0]


HANDLER = StateHandler(State.INITIALIZE, initialize, next_state=first_state)
