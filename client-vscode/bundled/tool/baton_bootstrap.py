"""Runs Baton from the libraries bundled in the VS Code extension, with any CPython >= 3.11.

Usage: python [-I] baton_bootstrap.py -m MODULE [ARG...]

`bundled/libs/common` holds what is the same for every Python (baton_lsp, the pure-Python
dependencies, ShellCheck's binary); `bundled/libs/cpXY` what is compiled per CPython minor
version (pydantic-core, PyYAML's C extension). Both go first on `sys.path`, so neither the
workspace nor the interpreter's own site-packages can shadow them, and nothing is installed.
Standard library only, and no syntax newer than Python 3.0, so that an old interpreter gets a
clear message instead of a SyntaxError.
"""
# ruff: noqa: UP031, RUF005  (%-formatting and list concatenation parse on any Python 3)

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LIBS = os.path.join(os.path.dirname(HERE), "libs")
EXIT_UNSUPPORTED = 3
"""Exit status for an interpreter the bundle cannot serve (the extension shows the message)."""


def available() -> "list[str]":
    """The CPython versions this bundle carries libraries for, e.g. ['3.11', '3.12']."""
    try:
        names = os.listdir(LIBS)
    except OSError:
        return []
    found = []
    for name in names:
        if name.startswith("cp3") and name[3:].isdigit() and int(name[3:]) >= 11:
            found.append((3, int(name[3:])))
    return ["%d.%d" % v for v in sorted(found)]


def main() -> int:
    version = "%d.%d" % sys.version_info[:2]
    implementation = getattr(sys, "implementation", None)
    name = getattr(implementation, "name", "cpython")
    have = available()
    if name != "cpython" or sys.version_info < (3, 11) or version not in have:
        sys.stderr.write(
            "Baton: the bundled server needs CPython %s; %s is %s %s. Select another "
            "interpreter, or install baton-lsp into this one and set baton.interpreter.\n"
            % (" or ".join(have) or "(no libraries in this build)", sys.executable, name,
               version))
        return EXIT_UNSUPPORTED
    args = sys.argv[1:]
    if len(args) < 2 or args[0] != "-m":
        sys.stderr.write("usage: python baton_bootstrap.py -m MODULE [ARG...]\n")
        return 2
    libs = [os.path.join(LIBS, "cp%d%d" % sys.version_info[:2]), os.path.join(LIBS, "common")]
    here = [p for p in sys.path if p and os.path.abspath(p) == HERE]
    sys.path[:] = libs + [p for p in sys.path if p not in here]
    import runpy

    from baton_lsp.paths import use_bundle

    use_bundle(os.path.abspath(__file__), libs)
    sys.argv = [args[1]] + args[2:]
    runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
