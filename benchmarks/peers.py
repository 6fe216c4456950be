"""The tools Baton's benchmarks compare with, installed by the benchmarks themselves.

markdownlint-cli2 and yaml-language-server come from npm at the versions pinned in
`benchmarks/peers/package-lock.json` (the newest that run on node 20), installed with
`npm ci` into a cache directory (default `~/.cache/baton-bench-peers`; `BATON_PEERS_DIR`
overrides) and re-installed only when the lock changes. `pygls_floor.py` beside this file is
the smallest pygls server, the floor any pygls-based server starts from.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCK = HERE / "peers" / "package-lock.json"
FLOOR_SERVER = HERE / "pygls_floor.py"


def peers_dir() -> Path:
    env = os.environ.get("BATON_PEERS_DIR")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "baton-bench-peers"


class PeersUnavailable(RuntimeError):
    """npm is missing or the pinned install failed; the message says which."""


def install() -> Path:
    """`npm ci` the pinned peers into `peers_dir()` unless that lock is installed already."""
    target = peers_dir()
    stamp = hashlib.sha256(LOCK.read_bytes()).hexdigest()
    marker = target / "STAMP"
    bins = [target / "node_modules" / ".bin" / n
            for n in ("markdownlint-cli2", "yaml-language-server")]
    if marker.is_file() and marker.read_text().strip() == stamp and all(
            b.exists() for b in bins):
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise PeersUnavailable("npm is not installed (the peers come from npm)")
    target.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / "peers" / name, target / name)
    print(f"installing the pinned peers into {target} (npm ci)…", file=sys.stderr, flush=True)
    proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                          cwd=target, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        raise PeersUnavailable(f"npm ci failed: {(proc.stderr or proc.stdout)[-400:]}")
    marker.write_text(stamp + "\n")
    return target


def markdownlint() -> list[str]:
    return [str(install() / "node_modules" / ".bin" / "markdownlint-cli2")]


def yaml_language_server() -> list[str]:
    return [str(install() / "node_modules" / ".bin" / "yaml-language-server"), "--stdio"]


def versions() -> dict[str, str]:
    """Installed version of each peer (from its package.json)."""
    import json

    out = {}
    for name in ("markdownlint-cli2", "yaml-language-server"):
        meta = install() / "node_modules" / name / "package.json"
        out[name] = json.loads(meta.read_text())["version"]
    node = shutil.which("node")
    if node:
        out["node"] = subprocess.run([node, "--version"], capture_output=True, text=True,
                                     check=False).stdout.strip()
    return out
