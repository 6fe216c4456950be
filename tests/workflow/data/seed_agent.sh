#!/usr/bin/env bash
# A `--runner command` agent that behaves as the seeds' agents do (issue 35): it writes its
# artifact at the pre-calculated path, persists values with the seeds' own
# `append_workflow_state` (seed 001, "state-persistence.sh"), reads them back in a later
# step with `load_workflow_state`'s `source`, returns the seeds' signals — REPORT_CREATED,
# PLAN_CREATED, PHASE_COMPLETE, DOCUMENTATION_UPDATED: [files] (seed 000, "Documentation
# Phase") — and reports errors with ERROR_CONTEXT first, then TASK_ERROR (seed 004, "Error
# Return Protocol"). SEED_AGENT_FAIL=<role> makes that role fail the seeds' way;
# SEED_AGENT_EXIT is its exit code then (default 1); SEED_AGENT_TRAP=<role> fails through
# seed 002's ERR trap handler; SEED_AGENT_DOCS replaces the document agent's list.
set -euo pipefail

# WORKFLOW_ID and STATE_FILE come from Baton's environment, as the seeds' blocks have them.

# Append state (GitHub Actions $GITHUB_OUTPUT pattern) — seed 001, verbatim
append_workflow_state() {
  local key="$1"
  local value="$2"
  echo "export ${key}=\"${value}\"" >> "$STATE_FILE"
}

# Load state — seed 001, "Selective State Persistence", verbatim but for the fallback: the
# seed recalculates with init_workflow_state, which this agent does not have
load_workflow_state() {
  local workflow_id="${1:-$$}"
  local state_file="${CLAUDE_PROJECT_DIR:-$HOME}/.claude/tmp/workflow_${workflow_id}.sh"

  if [ -f "$state_file" ]; then
    source "$state_file"
    return 0
  else
    return 1
  fi
}

cat >/dev/null  # the prompt; a real agent would follow it
role="$BATON_ROLE"
artifact="$BATON_ARTIFACT_PATH"
echo "PROGRESS: ${role} agent starting ${BATON_STEP_ID}"

if [ "${SEED_AGENT_FAIL:-}" = "$role" ]; then
  cat <<'EOF'
ERROR_CONTEXT: {
  "error_type": "file_error",
  "message": "Cannot access codebase directory",
  "details": {"path": "/invalid/path"}
}

TASK_ERROR: file_error - Cannot access codebase directory: /invalid/path
EOF
  exit "${SEED_AGENT_EXIT:-1}"
fi

if [ "${SEED_AGENT_TRAP:-}" = "$role" ]; then
  # Seed 002, "Error Trap Handler" (research-coordinator.md:98-144); the two `local` lines
  # are the ones the seed's excerpt leaves out (it uses both names)
  handle_coordinator_error() {
    local exit_code=$1
    local line_number=$2
    echo "ERROR_CONTEXT: {" >&2
    echo "  \"error_type\": \"agent_error\"," >&2
    echo "  \"message\": \"Research coordinator failed at line $line_number\"," >&2
    echo "}" >&2
    echo "TASK_ERROR: agent_error - Research coordinator failed"
    exit $exit_code
  }
  trap 'handle_coordinator_error $? $LINENO' ERR
  false
fi

case "$role" in
  research)
    mkdir -p "$(dirname "$artifact")"
    printf '# Research Report: %s\n\n## Findings\n\n- Sessions use signed cookies.\n' \
      "${BATON_TOPIC:-topic}" > "$artifact"
    append_workflow_state "SUPERVISOR_METADATA_PATH" \
      "${CLAUDE_PROJECT_DIR}/.claude/tmp/supervisor_metadata.json"
    append_workflow_state "SEED_TOPICS_JSON" '["auth","sessions"]'
    append_workflow_state "CURRENT_STATE" "research-by-the-agent"
    echo "REPORT_CREATED: $artifact"
    ;;
  plan)
    mkdir -p "$(dirname "$artifact")"
    cat > "$artifact" <<'EOF'
# Implementation Plan: login

## Metadata
- **Date**: 2026-11-29
- **Status**: [NOT STARTED]

## Implementation Phases

### Phase 1: Models [NOT STARTED]
dependencies: []

Tasks:
- [ ] Add the session model

### Phase 2: Routes [NOT STARTED]
dependencies: [1]

Tasks:
- [ ] Add the login route
EOF
    append_workflow_state "PLAN_FILE" "$artifact"
    append_workflow_state "CONTINUATION_CONTEXT" "phase 1 first, then phase 2's routes"
    echo "PLAN_CREATED: $artifact"
    ;;
  implement)
    # the plan step's values are still there, also from a phase's own worktree
    load_workflow_state "$WORKFLOW_ID" || {
      echo "TASK_ERROR: state_error - no state file for ${WORKFLOW_ID} in ${CLAUDE_PROJECT_DIR}"
      exit 1; }
    [ "${PLAN_FILE:-}" = "$BATON_PLAN_PATH" ] || {
      echo "TASK_ERROR: state_error - PLAN_FILE lost: '${PLAN_FILE:-}'"; exit 1; }
    mkdir -p "$(dirname "$artifact")" src
    echo "phase ${BATON_PHASE}" > "src/phase_${BATON_PHASE}.txt"
    printf '# Phase %s Summary\n\nstatus: complete\nwork_remaining: 0\n' "$BATON_PHASE" \
      > "$artifact"
    append_workflow_state "IMPLEMENTATION_STATUS" "complete"
    echo "PHASE_COMPLETE: SUCCESS"
    ;;
  debug)
    mkdir -p "$(dirname "$artifact")"
    printf '# Debug Report\n\nNothing to fix.\n' > "$artifact"
    echo "DEBUG_REPORT_CREATED: $artifact"
    ;;
  document)
    source "$STATE_FILE"
    [ "${IMPLEMENTATION_STATUS:-}" = "complete" ] || {
      echo "TASK_ERROR: state_error - IMPLEMENTATION_STATUS lost"; exit 1; }
    mkdir -p docs
    printf '\n## Login\n\nSign in at /login.\n' >> README.md
    printf '# Usage\n\nSee %s.\n' "$PLAN_FILE" > docs/usage.md
    echo "DOCUMENTATION_UPDATED: ${SEED_AGENT_DOCS:-[${CLAUDE_PROJECT_DIR}/README.md, docs/usage.md]}"
    ;;
  *)
    echo "TASK_ERROR: validation_error - unknown role ${role}"
    exit 2
    ;;
esac
