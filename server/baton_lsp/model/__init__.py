"""Document model: light `base.Model` records, each element with its 0-based `Range`.

Names are loaded from their modules on first use (PEP 562): importing one light module of
the package (`model.states`, `model.base`) must not build every document model, which is
what the CLI's and the language server's start-up would otherwise pay for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent import (
        AgentFile,
        BashBlock,
        CommandFile,
        Injection,
        SignalRef,
        StepHeading,
        TaskBlock,
    )
    from .base import Finding, Fix, Kind, Range, Related, Severity, TextEdit
    from .common import Frontmatter, FrontmatterEntry, Link, Suppression
    from .config import BatonConfig
    from .data import (
        CheckpointDoc,
        ErrorRecord,
        ErrorsLog,
        LoggedError,
        ReportMeta,
        StateEntry,
        StateFile,
        Unreadable,
    )
    from .plan import Dependencies, DependencyRef, MetadataEntry, Phase, Plan, Task

    Document = (Plan | AgentFile | CommandFile | StateFile | ErrorsLog | ReportMeta
                | CheckpointDoc | Unreadable)

_WHERE = {
    "agent": ("AgentFile", "BashBlock", "CommandFile", "Injection", "SignalRef",
              "StepHeading", "TaskBlock"),
    "base": ("Finding", "Fix", "Kind", "Range", "Related", "Severity", "TextEdit"),
    "common": ("Frontmatter", "FrontmatterEntry", "Link", "Suppression"),
    "config": ("BatonConfig",),
    "data": ("CheckpointDoc", "ErrorRecord", "ErrorsLog", "LoggedError", "ReportMeta",
             "StateEntry", "StateFile", "Unreadable"),
    "plan": ("Dependencies", "DependencyRef", "MetadataEntry", "Phase", "Plan", "Task"),
}
_MODULE_OF = {name: module for module, names in _WHERE.items() for name in names}

__all__ = [
    "AgentFile", "BashBlock", "BatonConfig", "CheckpointDoc", "CommandFile", "Dependencies",
    "DependencyRef", "Document", "ErrorRecord", "ErrorsLog", "Finding", "Fix", "Frontmatter",
    "FrontmatterEntry", "Injection", "Kind", "Link", "LoggedError", "MetadataEntry", "Phase",
    "Plan", "Range", "Related", "ReportMeta", "Severity", "SignalRef", "StateEntry",
    "StateFile", "StepHeading", "Suppression", "Task", "TaskBlock", "TextEdit", "Unreadable",
]


def __getattr__(name: str) -> Any:
    if name == "Document":
        value: Any = (__getattr__("Plan") | __getattr__("AgentFile")
                      | __getattr__("CommandFile") | __getattr__("StateFile")
                      | __getattr__("ErrorsLog") | __getattr__("ReportMeta")
                      | __getattr__("CheckpointDoc") | __getattr__("Unreadable"))
    elif name in _MODULE_OF:
        value = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
