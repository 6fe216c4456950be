"""The tools Baton's benchmarks compare with, installed by the benchmarks themselves.

From npm, at the versions pinned in `benchmarks/peers/package-lock.json` (the newest that run
on node 20): markdownlint-cli2, yaml-language-server and claude-code-lint (`claudelint`),
installed with `npm ci`. From PyPI, pinned with hashes in `benchmarks/peers/requirements.txt`:
agnix (its wheel carries the Rust binary; npm's `agnix` is an older release), skilllint and
skillsaw, installed with `pip --require-hashes` into a venv of their own. Both go into a cache
directory (default `~/.cache/baton-bench-peers`; `BATON_PEERS_DIR` overrides) and are installed
again only when their lock changes. `pygls_floor.py` beside this file is the smallest pygls
server, the floor any pygls-based server starts from.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOCK = HERE / "peers" / "package-lock.json"
PY_LOCK = HERE / "peers" / "requirements.txt"
FLOOR_SERVER = HERE / "pygls_floor.py"
NPM_BINS = ("markdownlint-cli2", "yaml-language-server", "claudelint")
PY_TOOLS = ("agnix", "skilllint", "skillsaw")


def peers_dir() -> Path:
    env = os.environ.get("BATON_PEERS_DIR")
    if env:
        return Path(env)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "baton-bench-peers"


class PeersUnavailable(RuntimeError):
    """npm or pip is missing or the pinned install failed; the message says which."""


def _installed(marker: Path, lock: Path, bins: list[Path]) -> bool:
    stamp = hashlib.sha256(lock.read_bytes()).hexdigest()
    return (marker.is_file() and marker.read_text().strip() == stamp
            and all(b.exists() for b in bins))


def install() -> Path:
    """`npm ci` the pinned npm peers into `peers_dir()` unless that lock is installed already."""
    target = peers_dir()
    marker = target / "STAMP"
    if _installed(marker, LOCK, [target / "node_modules" / ".bin" / n for n in NPM_BINS]):
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise PeersUnavailable("npm is not installed (the npm peers come from npm)")
    target.mkdir(parents=True, exist_ok=True)
    marker.unlink(missing_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(HERE / "peers" / name, target / name)
    print(f"installing the pinned peers into {target} (npm ci)…", file=sys.stderr, flush=True)
    proc = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                          cwd=target, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        raise PeersUnavailable(f"npm ci failed: {(proc.stderr or proc.stdout)[-400:]}")
    marker.write_text(hashlib.sha256(LOCK.read_bytes()).hexdigest() + "\n")
    return target


def install_python() -> Path:
    """A venv under `peers_dir()` with the hash-pinned Python peers; returns its `bin`.

    A venv of their own: skilllint and skillsaw pin their own pydantic and markdown-it, which
    must not meet Baton's. Wheels only, so nothing is built and no hook downloads anything."""
    venv = peers_dir() / "venv"
    bindir = venv / "bin"
    marker = venv / "STAMP"
    if _installed(marker, PY_LOCK, [bindir / n for n in PY_TOOLS]):
        return bindir
    print(f"installing the pinned Python peers into {venv} (pip --require-hashes)…",
          file=sys.stderr, flush=True)
    shutil.rmtree(venv, ignore_errors=True)
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True,
                          text=True, timeout=300, check=False)
    if made.returncode != 0:
        raise PeersUnavailable(f"python -m venv failed: {(made.stderr or made.stdout)[-400:]}")
    proc = subprocess.run(
        [str(bindir / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--require-hashes", "--no-deps", "--only-binary", ":all:", "-r", str(PY_LOCK)],
        capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode != 0:
        raise PeersUnavailable(f"pip install of {PY_LOCK.name} failed (the lock holds wheels for "
                               f"CPython 3.11 on x86_64 Linux): "
                               f"{(proc.stderr or proc.stdout)[-400:]}")
    marker.write_text(hashlib.sha256(PY_LOCK.read_bytes()).hexdigest() + "\n")
    return bindir


def markdownlint() -> list[str]:
    return [str(install() / "node_modules" / ".bin" / "markdownlint-cli2")]


def yaml_language_server() -> list[str]:
    return [str(install() / "node_modules" / ".bin" / "yaml-language-server"), "--stdio"]


def claudelint() -> list[str]:
    return [str(install() / "node_modules" / ".bin" / "claudelint")]


def agnix() -> list[str]:
    return [str(install_python() / "agnix")]


def skilllint() -> list[str]:
    return [str(install_python() / "skilllint")]


def skillsaw() -> list[str]:
    return [str(install_python() / "skillsaw")]


def versions(python_peers: bool = False) -> dict[str, str]:
    """Installed version of each npm peer (from its package.json), of node, and with
    `python_peers` of each Python peer (from the venv's metadata)."""
    out = {}
    packages = {"markdownlint-cli2": "markdownlint-cli2",
                "yaml-language-server": "yaml-language-server",
                "claudelint": "claude-code-lint"}
    for label, name in packages.items():
        meta = install() / "node_modules" / name / "package.json"
        out[label] = json.loads(meta.read_text())["version"]
    node = shutil.which("node")
    if node:
        out["node"] = subprocess.run([node, "--version"], capture_output=True, text=True,
                                     check=False).stdout.strip()
    if python_peers:
        python = install_python() / "python"
        code = ("import importlib.metadata as m, json, sys; "
                "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))")
        proc = subprocess.run([str(python), "-c", code, *PY_TOOLS], capture_output=True,
                              text=True, check=True)
        out.update(json.loads(proc.stdout))
    return out
