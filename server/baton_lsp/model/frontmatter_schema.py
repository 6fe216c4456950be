"""Typed views of agent and command front matter, used for JSON Schema generation.

Validation of real files is done by the rules (with positions and friendly messages);
these models document the accepted shape for editors (`schemas/*.schema.json`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

ToolList = str | list[str]


class AgentFrontmatter(BaseModel):
    """Front matter of `.claude/agents/*.md`."""

    model_config = ConfigDict(extra="allow", populate_by_name=True,
                              title="Baton agent front matter")

    name: str | None = Field(None, description="Agent name (newer format: name + description).")
    description: str | None = Field(None, description="One line: what the agent does.")
    allowed_tools: ToolList | None = Field(
        None, alias="allowed-tools",
        description="Comma list or YAML list of Claude Code tools, or `None`.")
    tools: ToolList | None = Field(None, description="Alternative spelling of allowed-tools.")
    model: str | None = Field(None, description="haiku, sonnet, opus (optionally versioned).")
    model_justification: str | None = Field(None, alias="model-justification")
    fallback_model: str | None = Field(None, alias="fallback-model")
    dependent_agents: ToolList | None = Field(
        None, alias="dependent-agents", description="Agents this coordinator invokes.")


class CommandFrontmatter(BaseModel):
    """Front matter of `.claude/commands/*.md`."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              title="Baton command front matter")

    allowed_tools: ToolList | None = Field(None, alias="allowed-tools")
    argument_hint: str | None = Field(None, alias="argument-hint")
    description: str | None = None
    command_type: str | None = Field(
        None, alias="command-type",
        description="primary, utility, workflow, dependent or example.")
    dependent_agents: ToolList | None = Field(None, alias="dependent-agents")
    dependent_commands: ToolList | None = Field(None, alias="dependent-commands")
    parent_commands: ToolList | None = Field(None, alias="parent-commands")
    library_requirements: list[dict[str, str] | str] | None = Field(
        None, alias="library-requirements",
        description='List of `- library.sh: ">=1.0.0"` entries.')
    documentation: str | None = None
    model: str | None = None
    disable_model_invocation: bool | None = Field(None, alias="disable-model-invocation")
    name: str | None = None
