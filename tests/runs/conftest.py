"""Run-record tests share the engine tests' scratch workspace (a run needs a workspace)."""

from tests.workflow.conftest import Workspace, ws

__all__ = ["Workspace", "ws"]
