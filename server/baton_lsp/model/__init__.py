"""Pydantic document model: every element carries a 0-based source `Range`."""

from .agent import AgentFile, BashBlock, CommandFile, Injection, SignalRef, StepHeading, TaskBlock
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

Document = (Plan | AgentFile | CommandFile | StateFile | ErrorsLog | ReportMeta | CheckpointDoc
            | Unreadable)

__all__ = [
    "AgentFile", "BashBlock", "BatonConfig", "CheckpointDoc", "CommandFile", "Dependencies",
    "DependencyRef",
    "Document", "ErrorRecord", "ErrorsLog", "Finding", "Fix", "Frontmatter", "FrontmatterEntry",
    "Injection", "Kind", "Link", "LoggedError", "MetadataEntry", "Phase", "Plan", "Range",
    "Related",
    "ReportMeta", "Severity", "SignalRef", "StateEntry", "StateFile", "StepHeading",
    "Suppression", "Task", "TaskBlock", "TextEdit", "Unreadable",
]
