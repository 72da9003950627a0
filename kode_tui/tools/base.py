"""What every tool is: a name, a description, pydantic parameters, what it needs the user to
allow, and the work it does.

A tool never asks the user for leave itself (tools sit below the soul): `permission()` describes
what running a call would do, the soul's approval decides, and only then `run()` is called. (Only
`AskUserQuestion`, whose work is asking, sends a question on `ToolEnv.bus`.) A tool reports a
failure the model should read by raising `ToolError` or returning `ToolOutput(is_error=True)`; any
other exception is a bug, which the toolset turns into an error result too, so the loop goes on.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

import msgspec
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from kode_tui.message import ContentPart, TextPart
from kode_tui.pathnames import is_within, unescape_name
from kode_tui.session.journal import FileJournal
from kode_tui.session.snapshot import WorkSnapshot
from kode_tui.session.state import SessionState
from kode_tui.wire.events import BriefBlock, DisplayBlock, PlanAsk, PlanVerdict, ToolResult

if TYPE_CHECKING:
    from kode_tui.tools.background import BackgroundTasks
    from kode_tui.tools.sandbox import Confinement
    from kode_tui.wire.bus import WireBus

MAX_OUTPUT_CHARS = 50_000
"""Tool output longer than this is cut, with a note saying so."""

MAX_LINE_CHARS = 2_000


class ToolError(Exception):
    """A failure the model should read (bad path, no match, ...): becomes an error result."""

    def __init__(self, message: str, *, brief: str = "", output: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.brief = brief or message
        self.output = output


class ToolOutput(msgspec.Struct, frozen=True):
    """A tool's result, in Kimi's shape: the model reads `<system>message</system>` + `output`."""

    output: str = ""
    message: str = ""
    """Status for the model (and the user), e.g. `Command executed successfully.`"""
    brief: str = ""
    """A few words for the user's tool-call line, e.g. `3 lines`."""
    is_error: bool = False
    display: Sequence[DisplayBlock] = ()
    parts: Sequence[ContentPart] = ()
    """Images (and other media) the model is given after `output` (an MCP tool's), with the
    text parts around them when the tool gives Kimi's form (ReadMediaFile's `<image path=…>`
    and `</image>`): the context keeps them in order, the wire joins their text into `output`."""
    blocked: str = ""
    """Why a Shell command failed (or was undone) because of the sandbox, e.g. `it needs the
    network (off in the sandbox)`; the soul then offers to run it outside."""

    def blocks(self) -> list[DisplayBlock]:
        """The display blocks of the wire's ToolResult: the brief first, when there is one."""
        brief: list[DisplayBlock] = [BriefBlock(text=self.brief)] if self.brief else []
        return brief + list(self.display)

    def event(self, tool_call_id: str) -> ToolResult:
        """The wire's ToolResult of the call `tool_call_id` (the soul sends it)."""
        return ToolResult(
            tool_call_id=tool_call_id,
            is_error=self.is_error,
            output=self.output + "".join(p.text for p in self.parts if isinstance(p, TextPart)),
            message=self.message,
            display=self.blocks(),
            parts=[part for part in self.parts if not isinstance(part, TextPart)],
        )


PermissionKind = Literal["edit", "shell", "read", "other"]


class Permission(msgspec.Struct, frozen=True):
    """What running one call needs the user to allow (see `kode_tui.soul.approval`)."""

    kind: PermissionKind
    action: str
    """What approving allows, e.g. `edit file`, `run command`."""
    description: str
    """The call in a line, e.g. `WriteFile hello.py`, `Shell: git status`."""
    scope: str
    """The key `approve for session` remembers, e.g. `edit`, `shell:git status`."""
    scope_label: str
    """That scope in words, e.g. `all edits in the work dir`."""
    outside_work_dir: bool = False
    display: Sequence[DisplayBlock] = ()
    always_ask: str = ""
    """Why this call asks every time, in every mode (yolo too), with no session approval
    offered, e.g. `writes here can make tools run code`; empty for an ordinary call."""
    plan: PlanAsk | None = None
    """ExitPlanMode's: the choices its request offers (`ApprovalRequest.plan`)."""
    private_address: str = ""
    """Why the call reaches an address off the public internet (FetchURL of `localhost`,
    which `resolves to 127.0.0.1, a loopback address`): like a call outside the work dir, it
    asks every time in every mode but yolo, with no session approval offered."""
    network: bool = False
    """The call reaches a public host on the network itself (FetchURL): in the sandbox mode it
    runs without asking when the sandbox's commands reach the network (`[sandbox] network =
    true`), as a networked Shell command does there."""

    @property
    def asks_every_time(self) -> bool:
        """Whether no session approval may cover the call (outside the work dir, a private
        address, or protected)."""
        return self.outside_work_dir or bool(self.private_address) or bool(self.always_ask)


class ToolEnv(msgspec.Struct):
    """What tools may touch: the work dir, the session's file journal and its state."""

    work_dir: Path
    journal: FileJournal | None = None
    state: SessionState = msgspec.field(default_factory=SessionState)
    save_state: Callable[[], Awaitable[None]] | None = None
    """Persists `state` (state.json) after a tool changed it."""
    snapshots: WorkSnapshot | None = None
    """The work dir's snapshots: Shell calls and checkpoints record what changed in files."""
    sandbox: Confinement | None = None
    """Where a Shell call runs: in the session's sandbox with a profile (the model's calls),
    or outside (None: the user's `!cmd`, an approved run outside, no sandbox here)."""
    bus: WireBus | None = None
    """The session's wire, where `AskUserQuestion` asks its questions; None: no one to ask."""
    verdict: PlanVerdict | None = None
    """The user's answer to ExitPlanMode's request, which the tool carries out."""
    tasks: BackgroundTasks | None = None
    """The session's background tasks (`Shell(run_in_background)`, TaskList, TaskOutput,
    TaskStop); None: none can run here."""
    skill_file: Callable[[Path], bool] | None = None
    """Whether a path lies in the folder of a skill the system prompt lists (ReadFile,
    ReadMediaFile, Glob and Grep read there without asking, wherever the folder is); None: no
    skills here."""
    ask: Callable[[Permission], Awaitable[bool]] | None = None
    """Asks the session's approval, while the call runs, for more than its permission covered
    (a FetchURL redirect to another host): True when allowed. None: no one can be asked, so the
    tool stops there instead."""
    takes_images: Callable[[], bool] | None = None
    """Whether the model in use now takes images (ReadMediaFile loads none for one that does
    not); None: it does."""

    def resolve(self, raw: str) -> Path:
        """`raw` as an absolute, normalised path (relative ones are taken from the work dir).

        Symlinks are not followed, so the path stays the one the model named; `is_inside` checks
        the resolved target.
        """
        # A name the tools showed escaped (`caf\\xe9.txt`, see kode_tui.pathnames) comes back
        # as the file it names.
        path = Path(os.path.expanduser(unescape_name(raw)))
        if not path.is_absolute():
            path = self.work_dir / path
        return Path(os.path.normpath(path))

    def is_inside(self, path: Path) -> bool:
        """Whether `path` (and the file a symlink there points to) lies in the work dir."""
        return is_within(path, self.work_dir)

    def display_path(self, path: Path) -> str:
        """`path` relative to the work dir when it is inside, else absolute."""
        try:
            return str(path.relative_to(self.work_dir))
        except ValueError:
            return str(path)


P = TypeVar("P", bound=BaseModel)


class Tool(ABC, Generic[P]):
    """One tool the model can call. Subclasses set `name`, `description` and `params`."""

    name: ClassVar[str]
    description: ClassVar[str]
    params: type[P]
    restores_masked: ClassVar[bool] = False
    """Whether `[masked: NAME]` in the arguments becomes the key again when the file named by
    the `path` parameter already holds that key (file writers: rewriting a `.env` read masked
    keeps its key). Tools that send their arguments anywhere must leave it False."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other names a call may use (a stored session's older name): the tool answers to them,
    but is offered to the model under `name` only."""
    concurrent: ClassVar[bool] = False
    """Whether the step runs a call of it at the same time as the neighbouring calls of tools
    that say so too (the `Agent` tool: each subagent is a loop of its own, whose approvals queue
    in the shared panel). Every other call runs alone, in the order the model gave."""
    needs_images: ClassVar[bool] = False
    """Whether it is offered only while the model takes images (ReadMediaFile, as Kimi CLI
    offers it); a call made anyway gets the tool's own answer."""

    def schema(self) -> dict[str, Any]:
        """The tool in the OpenAI function-calling format litellm takes."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": _parameters(self.params),
            },
        }

    async def permission(self, params: P, env: ToolEnv) -> Permission | None:
        """What the call needs allowed before it runs; None when it needs nothing."""
        return None

    @abstractmethod
    async def run(self, params: P, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        """Do the work. Cancellation (the user pressed Esc) must leave nothing running."""

    async def close(self) -> None:
        """The session is closing: stop whatever the tool's calls left running."""


def count_lines(text: str) -> int:
    """How many lines `text` has, a last one without a line end counted too."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def truncate(text: str, limit: int = MAX_OUTPUT_CHARS) -> tuple[str, bool]:
    """`text` cut to `limit` characters (at a line end when one is near); whether it was cut."""
    if len(text) <= limit:
        return text, False
    cut = text.rfind("\n", limit - 1000, limit)
    return text[: cut + 1 if cut > 0 else limit], True


class _ParamsSchema(GenerateJsonSchema):
    """Pydantic's JSON schema, but a default that is JSON already (None, a bool, an int, a
    string) is written as it is: pydantic builds a serializer to encode each default (~0.3 ms
    apiece, ~40 in the tool set, before the first request)."""

    def encode_default(self, dft: Any) -> Any:
        if dft is None or type(dft) in (bool, int, str):
            return dft
        return super().encode_default(dft)


@functools.cache
def _parameters(params: type[BaseModel]) -> dict[str, Any]:
    """A params model's JSON schema (shared: never changed), built once. Pydantic builds it
    anew at each call, and every tool's went with every step (~5 ms for the set)."""
    schema = params.model_json_schema(schema_generator=_ParamsSchema)
    schema.pop("title", None)
    return schema
