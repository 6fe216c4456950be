#!/usr/bin/env bash
# The real agent CLIs (claude, codex, gemini, opencode) for the end-to-end tests, at the versions
# pinned in tests/agents/npm/package-lock.json, installed with `npm ci` into a cache
# directory (default ~/.cache/baton-agents; BATON_AGENTS_DIR overrides). Re-installs only
# when the lock changed. When npm cannot install them the reason is written to
# $dir/UNAVAILABLE, and the tests that need a CLI skip with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."

dir=${BATON_AGENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-agents}
src=tests/agents/npm
mkdir -p "$dir"
stamp=$(sha256sum "$src/package-lock.json" | cut -d' ' -f1)
if [ -f "$dir/STAMP" ] && [ "$(cat "$dir/STAMP")" = "$stamp" ] && [ -x "$dir/node_modules/.bin/claude" ] \
  && { [ -x "$dir/node_modules/.bin/opencode" ] || [ -f "$dir/UNAVAILABLE-opencode" ]; }; then
  echo "agent CLIs: up to date in $dir"
  exit 0
fi
rm -f "$dir/UNAVAILABLE" "$dir/UNAVAILABLE-opencode" "$dir/STAMP"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm is not installed" > "$dir/UNAVAILABLE"
  echo "agent CLIs: npm is not installed; the real-CLI tests will skip" >&2
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dir/"
log=$(mktemp)
if (cd "$dir" && timeout 900 npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
  # Two claude releases declare the same `claude` bin: link each one explicitly (the newest
  # as .bin/claude, every release as versions/claude-<version>/claude).
  ln -sfn ../@anthropic-ai/claude-code/bin/claude.exe "$dir/node_modules/.bin/claude"
  for pkg in "$dir"/node_modules/claude-code-*; do
    [ -d "$pkg" ] || continue
    mkdir -p "$dir/versions/$(basename "$pkg" | sed 's/^claude-code-/claude-/')"
    ln -sfn "$pkg/bin/claude.exe" "$dir/versions/$(basename "$pkg" | sed 's/^claude-code-/claude-/')/claude"
  done
  # OpenCode is locked as its platform packages (see package.json): link the first one that
  # runs here, the AVX2 build before the baseline, as opencode-ai's own postinstall orders them.
  # Elsewhere (another OS or CPU) opencode alone is unavailable, and its tests say why.
  for pkg in opencode-linux-x64 opencode-linux-x64-baseline; do
    if "$dir/node_modules/$pkg/bin/opencode" --version >/dev/null 2>&1; then
      ln -sfn "../$pkg/bin/opencode" "$dir/node_modules/.bin/opencode"
      break
    fi
  done
  if [ ! -x "$dir/node_modules/.bin/opencode" ]; then
    echo "no pinned opencode build runs here ($(uname -s) $(uname -m)): only the linux-x64" \
      "packages are locked" > "$dir/UNAVAILABLE-opencode"
  fi
  echo "$stamp" > "$dir/STAMP"
  for bin in "$dir"/node_modules/.bin/{claude,codex,gemini,opencode} "$dir"/versions/*/claude; do
    [ -x "$bin" ] || continue
    printf 'agent CLIs: %s: %s\n' "${bin#"$dir"/}" "$("$bin" --version 2>/dev/null | tail -n 1)"
  done
else
  { echo "npm ci of the pinned agent CLIs failed:"; tail -n 5 "$log"; } > "$dir/UNAVAILABLE"
  echo "agent CLIs: $(cat "$dir/UNAVAILABLE")" >&2
fi
rm -f "$log"
