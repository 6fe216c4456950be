"""Run `baton run` on a workspace with a real disk fault, fix the fault, `baton resume`: the
steps of tests/workflow/test_disk_faults.py that need a mount, run inside a private mount
namespace (`unshare -m --propagation private python disk_fault_driver.py WS MODE`) so the
small tmpfs never shows outside it and disappears with it.

MODE `enospc`: a 16 KiB tmpfs on `.claude/data/checkpoints` fills up mid-run (ENOSPC), then
is grown to 8 MiB. MODE `erofs`: `.claude/tmp` (the state file's directory) is a read-only
tmpfs (EROFS), then remounted read-write. Prints one JSON object: each command's exit code
and output, and `baton status --json` of the workflow after each. Standard library only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

WID = "fault"


def sh(*argv: str) -> dict[str, object]:
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=300, check=False)
    return {"code": r.returncode, "out": r.stdout + r.stderr}


def baton(ws: Path, *args: str) -> dict[str, object]:
    return sh(sys.executable, "-m", "baton_lsp", *args, "--workspace", str(ws))


def status(ws: Path) -> object:
    r = baton(ws, "status", WID, "--json")
    try:
        return json.loads(str(r["out"]))
    except ValueError:
        return r


def main() -> int:
    ws, mode = Path(sys.argv[1]), sys.argv[2]
    if mode == "enospc":
        where, options, fixed = ws / ".claude/data/checkpoints", "size=16k", "remount,size=8m"
    else:
        where, options, fixed = ws / ".claude/tmp", "ro,size=1m", "remount,rw"
    where.mkdir(parents=True, exist_ok=True)
    out: dict[str, object] = {"mount": sh("mount", "-t", "tmpfs", "-o", options, "tmpfs",
                                          str(where))}
    out["run"] = baton(ws, "run", "Look at logging and tracing", "--scope", "research-only",
                       "--complexity", "2", "--id", WID)
    out["after_run"] = status(ws)
    out["fix"] = sh("mount", "-o", fixed, str(where))
    out["resume"] = baton(ws, "resume", WID)
    out["after_resume"] = status(ws)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
