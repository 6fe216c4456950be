"""Baton's deterministic example agent, for people writing their own script agents.

The agent itself is `baton_lsp.workflow.scripted` (one source: the `script` runner runs the
same module by default); read it there. This file only runs it with the interpreter Baton runs
in, as a workspace's own agent script would be run: `[workflow] script = "path/to/agent.py"`.
"""

import sys

from baton_lsp.workflow.scripted import main

if __name__ == "__main__":
    sys.exit(main())
