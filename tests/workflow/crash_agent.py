"""Launch counter in front of the scripted agent, for the random-kill crash harness.

The engine names a step's log `<step>.attempt-N.log` with N restarting at 1 on resume, so the
logs cannot tell a resume's launch from the killed run's. This script (the `script` runner's
agent and the test command) appends one line per launch — step, which `baton` process launched
it (`CRASH_HARNESS_GEN` in the environment the engine passes on), pid, time, artifact — then
runs the unchanged scripted agent in the same process. Standard library only.
"""

import os
import runpy
import sys
import time

LOG = ("step", "generation", "pid", "time", "artifact")


def main() -> None:
    env = os.environ
    workspace = env.get("BATON_WORKSPACE", ".")
    path = os.path.join(workspace, ".claude", "tmp", "crash_launches.tsv")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fields = [env.get("BATON_STEP_ID", "?"), env.get("CRASH_HARNESS_GEN", "?"),
              str(os.getpid()), f"{time.time():.6f}", env.get("BATON_ARTIFACT_PATH", "")]
    with open(path, "a", encoding="utf-8") as fh:  # O_APPEND: one short line, one write
        fh.write("\t".join(f.replace("\t", " ").replace("\n", " ") for f in fields) + "\n")
    sys.argv = ["baton_lsp.workflow.scripted"]
    runpy.run_module("baton_lsp.workflow.scripted", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
