"""User configuration: `[tool.baton]` in pyproject.toml or `.claude/baton.toml`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .base import Severity

DEFAULT_REQUIRED_METADATA = [
    "Date", "Feature", "Status", "Estimated Hours", "Standards File", "Research Reports",
]
DEFAULT_REQUIRED_METADATA_G3 = ["Task", "Status", "Effort"]
DEFAULT_SHELLCHECK_EXCLUDE = ["SC1090", "SC1091", "SC2154"]


def _kebab(name: str) -> str:
    return name.replace("_", "-")


class BatonConfig(BaseModel):
    """Every setting has a default so an empty configuration is valid."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=_kebab, populate_by_name=True, frozen=False,
        defer_build=True,
    )

    select: list[str] = Field(
        default_factory=list,
        description="Rule codes or code prefixes to enable (e.g. `BTN1`); empty enables all.",
    )
    ignore: list[str] = Field(
        default_factory=list, description="Rule codes or prefixes to disable."
    )
    severity: dict[str, Severity] = Field(
        default_factory=dict, description="Per-rule severity overrides, e.g. `BTN120 = \"error\"`."
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Glob patterns (relative to the workspace root) of files never checked.",
    )
    required_metadata: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REQUIRED_METADATA),
        description="Metadata keys every G1/G2 plan must have.",
    )
    required_metadata_g3: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REQUIRED_METADATA_G3),
        description="Metadata keys every G3 plan (bullets under the title) must have.",
    )
    shellcheck: bool = Field(True, description="Run ShellCheck on bash blocks of commands.")
    shellcheck_exclude: list[str] = Field(
        default_factory=lambda: list(DEFAULT_SHELLCHECK_EXCLUDE),
        description="ShellCheck codes to skip (blocks read state from earlier blocks).",
    )
    bash_block_max_lines: int = Field(400, ge=1, description="Longest bash block tolerated.")
    max_file_size: int = Field(
        4 * 1024 * 1024, ge=1024, description="Files larger than this (bytes) are not parsed."
    )
    extra_tools: list[str] = Field(
        default_factory=list, description="Tool names to accept in `allowed-tools`."
    )
    extra_models: list[str] = Field(
        default_factory=list, description="Model names to accept in `model`."
    )
    extra_frontmatter_keys: list[str] = Field(
        default_factory=list, description="Command front matter keys to accept."
    )

    def enabled(self, code: str) -> bool:
        if self.select and not any(code.startswith(p) for p in self.select):
            return False
        return not any(code.startswith(p) for p in self.ignore)

    def severity_for(self, code: str, default: Severity) -> Severity:
        return self.severity.get(code, default)
