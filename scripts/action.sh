#!/usr/bin/env bash
# The GitHub Action's work (action.yml), runnable anywhere: install Baton from this
# repository into its own virtualenv, then check and write SARIF for code scanning.
#
# Environment (action.yml sets it from the action's inputs; every one has a default):
#   BATON_PATHS   paths to check, separated by spaces (default: .)
#   BATON_ARGS    further `baton check` options, separated by spaces (e.g. --select BTN1)
#   BATON_SARIF   where the SARIF file is written (default: baton.sarif)
#   BATON_PYTHON  the interpreter to build the virtualenv with (default: python3)
#   BATON_VENV    the virtualenv (default: $RUNNER_TEMP/baton-venv, else a temporary one)
#   GITHUB_OUTPUT set by Actions: `sarif-file` and `exit-code` (baton check's) are written
#
# Exit status: 0 when the check ran (its own exit code is the `exit-code` output, 1 meaning
# error-severity findings, so that the SARIF is uploaded either way), 2 when it could not
# run (installation failed, a usage or configuration error): nothing to upload then.
set -euo pipefail

source_dir=$(cd "$(dirname "$0")/.." && pwd)
paths=${BATON_PATHS:-.}
sarif=${BATON_SARIF:-baton.sarif}
python=${BATON_PYTHON:-python3}
venv=${BATON_VENV:-}
if [ -z "$venv" ]; then
  if [ -n "${RUNNER_TEMP:-}" ]; then
    venv="$RUNNER_TEMP/baton-venv"
  else
    venv=$(mktemp -d "${TMPDIR:-/tmp}/baton-venv.XXXXXX")
  fi
fi

# The runtime lock: Baton's dependencies pinned and hash-checked, no test tools.
lock="$source_dir/requirements.runtime.lock.txt"
[ -f "$lock" ] || lock="$source_dir/requirements.lock.txt"

if [ ! -x "$venv/bin/baton" ]; then
  echo "::group::Install Baton from $source_dir"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
    -r "$lock" || { echo "::error::installing Baton's locked dependencies failed"; exit 2; }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation "$source_dir" || { echo "::error::installing Baton failed"; exit 2; }
  echo "::endgroup::"
fi
"$venv/bin/baton" --version

read -r -a path_list <<< "$paths"
read -r -a extra <<< "${BATON_ARGS:-}"
mkdir -p "$(dirname "$sarif")"

# Findings readable in the log; then the SARIF (from the result cache: not checked twice).
set +e
"$venv/bin/baton" check "${extra[@]}" "${path_list[@]}"
"$venv/bin/baton" check --output-format sarif "${extra[@]}" "${path_list[@]}" > "$sarif"
code=$?
set -e
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  { echo "sarif-file=$sarif"; echo "exit-code=$code"; } >> "$GITHUB_OUTPUT"
fi
if [ "$code" -ge 2 ]; then
  echo "::error::baton check could not run (exit code $code)"
  exit 2
fi
echo "baton check: exit code $code; SARIF written to $sarif"
