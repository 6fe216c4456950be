"""A holder of one of Baton's repository locks killed while holding it: what a run killed in
the middle of its git work leaves for the next holder to reconcile."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

_HOLD = """\
import json, signal, sys
from pathlib import Path
from baton_lsp.workflow.repolock import RepoLock
common, name, owner, intent, leave = Path(sys.argv[1]), sys.argv[2], *map(json.loads, sys.argv[3:])
lock = RepoLock(common, name)
assert lock.try_acquire(owner)
if intent:
    lock.note(intent)
for rel in leave:
    (common / rel).write_text("")
print("holding", flush=True)
signal.pause()  # until the test kills it
"""


def kill_holder(common: Path, lock: str, owner: dict[str, Any],
                intent: dict[str, Any] | None = None, leave: tuple[str, ...] = ()) -> None:
    """A process takes the lock `lock` (a `repolock` name) of the git directory `common` as
    `owner`, records `intent`, leaves the (lock) files `leave` behind, and is SIGKILLed while
    holding it: the lock file still names it."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(common), lock,
                               json.dumps(owner), json.dumps(intent), json.dumps(list(leave))],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    holder.kill()
    holder.wait(10)
