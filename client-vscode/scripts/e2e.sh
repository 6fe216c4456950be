#!/usr/bin/env bash
# One command for the VS Code end-to-end test: set up code-server + chromium (cached), build
# this machine's .vsix with the server bundled (npm run package: PyPI wheels pinned by the
# runtime lock), run e2e/e2e.mjs. BATON_PYTHON: a Python with baton_lsp installed, for `baton
# check` and the steps after the bundled server's (default: the repo's .venv, else /tmp/venv).
# Extra runs: BATON_E2E_RUNS=3.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(cd .. && pwd)
if [ -z "${BATON_PYTHON:-}" ]; then
  for p in "$repo/.venv/bin/python" /tmp/venv/bin/python; do
    if [ -x "$p" ]; then BATON_PYTHON=$p; break; fi
  done
fi
: "${BATON_PYTHON:?set BATON_PYTHON to a Python with baton_lsp installed}"
"$BATON_PYTHON" -c "import baton_lsp" || { echo "e2e: $BATON_PYTHON cannot import baton_lsp" >&2; exit 1; }
export BATON_PYTHON
CODE_SERVER=$(scripts/e2e-setup.sh | tail -n 1)
export CODE_SERVER
export CHROMIUM=${CHROMIUM:-$(command -v chromium)}
[ -d node_modules ] || npm ci --no-audit --no-fund
[ "${BATON_E2E_SKIP_PACKAGE:-}" = 1 ] || npm run --silent package >/dev/null
for i in $(seq 1 "${BATON_E2E_RUNS:-1}"); do
  node e2e/e2e.mjs
done
