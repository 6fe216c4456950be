#!/usr/bin/env bash
# Installs what the VS Code end-to-end test needs, offline-tolerant:
#   - Debian packages libkrb5-dev (kerberos build), ripgrep (replaces @vscode/ripgrep's GitHub
#     download) and chromium (the browser playwright-core drives) — apt-get only when one is
#     missing and we are root;
#   - code-server 4.100.3 (VS Code 1.100.3, the newest on Node 20) from npm into a cache dir, with
#     the fixes of reference/toolchain.md §3.3 (no GitHub / nodejs.org downloads).
# Prints the code-server executable path on its last line. Idempotent: a finished install is reused.
set -euo pipefail

CS_VERSION=4.100.3
CACHE=${BATON_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/baton-e2e}
D="$CACHE/code-server-$CS_VERSION"
BIN="$D/node_modules/.bin/code-server"

missing=()
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "e2e-setup: missing ${missing[*]}; install them (apt-get install libkrb5-dev ripgrep chromium)" >&2
    exit 1
  fi
  echo "e2e-setup: apt-get install ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

if [ -f "$D/.done" ] && [ -x "$BIN" ]; then
  echo "$BIN"
  exit 0
fi

echo "e2e-setup: installing code-server $CS_VERSION into $D (about a minute)" >&2
rm -rf "$D"
mkdir -p "$D/home"
log="$D/install.log"
(
  cd "$D"
  # A private HOME keeps npm/node-gyp caches out of the user's; nodedir points node-gyp at the
  # headers Node ships instead of downloading them; yes lets node-pty's npx fetch node-gyp.
  export HOME="$D/home" npm_config_yes=true npm_config_loglevel=error npm_config_update_notifier=false
  npm_config_nodedir="$(dirname "$(dirname "$(command -v node)")")"
  export npm_config_nodedir
  npm init -y >/dev/null
  npm install --no-audit --no-fund --ignore-scripts "code-server@$CS_VERSION"
  cd node_modules/code-server/lib/vscode
  npm install --no-audit --no-fund --omit=dev --ignore-scripts
  # @vscode/ripgrep's postinstall downloads from GitHub unless bin/ already exists.
  mkdir -p node_modules/@vscode/ripgrep/bin
  cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
  npm rebuild --foreground-scripts
  cd "$D"
  npm_config_unsafe_perm=true npm rebuild code-server --foreground-scripts
  # argon2's prebuilt download fails offline; it then builds from source.
  npm rebuild argon2 --foreground-scripts
) >"$log" 2>&1 || { echo "e2e-setup: install failed; last lines of $log:" >&2; tail -n 40 "$log" >&2; exit 1; }

HOME="$D/home" "$BIN" --version >&2
touch "$D/.done"
echo "$BIN"
