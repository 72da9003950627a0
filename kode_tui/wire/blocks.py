"""Display blocks of tool results and approval requests, shaped as Kimi CLI's (DESIGN.md §3)."""

# Annotations are evaluated as the module loads, not postponed: pydantic compiles and evaluates
# each field's annotation from its string otherwise (issue 31: ~6 ms for the models a session
# loads before its first request).

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from kode_tui.message import type_tag


class _Block(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)


class DiffBlock(_Block):
    type: Literal["diff"] = "diff"
    path: str
    old_text: str
    new_text: str


class ShellBlock(_Block):
    type: Literal["shell"] = "shell"
    language: str = "bash"
    """Kimi CLI's field; it needs it to read the block."""
    command: str


class TodoItem(_Block):
    title: str
    status: str
    """As the TodoWrite tool reports it, e.g. `pending`, `in_progress`, `done`."""


class TodoBlock(_Block):
    type: Literal["todo"] = "todo"
    items: list[TodoItem]


class BriefBlock(_Block):
    type: Literal["brief"] = "brief"
    text: str


class SubagentBlock(_Block):
    """What a subagent did for a tool call, one line per step, text, call and result: read back
    from Kimi CLI's `SubagentEvent` records (see `PastResults`); never recorded."""

    type: Literal["subagent"] = "subagent"
    agent_id: str = ""
    subagent_type: str = ""
    steps: list[str] = Field(default_factory=list)


class UnknownBlock(_Block):
    """A display block of a kind this version does not know: kept, shown as nothing."""

    model_config = ConfigDict(extra="allow")
    type: str


DisplayBlock = Annotated[
    Annotated[DiffBlock, Tag("diff")]
    | Annotated[ShellBlock, Tag("shell")]
    | Annotated[TodoBlock, Tag("todo")]
    | Annotated[BriefBlock, Tag("brief")]
    | Annotated[SubagentBlock, Tag("subagent")]
    | Annotated[UnknownBlock, Tag("unknown")],
    Discriminator(type_tag(("diff", "shell", "todo", "brief", "subagent"))),
]
