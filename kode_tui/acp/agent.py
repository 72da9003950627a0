"""`kode-tui acp`: kode-tui as an Agent Client Protocol agent over stdin/stdout.

Editors (Zed, JetBrains) and clients such as `acpx` start it and speak JSON-RPC on its stdin and
stdout; nothing else may be written to stdout, so the CLI moves it to stderr before this starts.
Built on the `agent-client-protocol` package (its schema models and its JSON-RPC connection); it
reaches the domain through `AgentSession` alone, as the TUI and print mode do, so a session made
here is an ordinary kode-tui session (the TUI opens it afterwards).

- `session/new` makes a session in the client's `cwd`; `session/load` opens one by id (kode-tui's
  or a Kimi CLI session of that work dir, from either one's store) or by a session folder's
  absolute path (then the path is its id for the client) and replays its conversation
  (`updates.history_updates`). The client's `mcpServers` are not connected (kode-tui's own
  config decides). A `cwd` that is the root or the home folder is refused (`paths.too_wide`).
  A session is titled for the client's list (`session_info_update`) once it has a title.
- `session/prompt` runs a turn, or one of the slash commands advertised: the domain's built-in
  ones (`kode_tui.soul.facade.COMMANDS`: `/compact`, `/revert N`, `/restore N`, `/clear`,
  `/context`...), then the custom commands no built-in has the name of. A command that changed
  the conversation (a revert, a restore, a drop) replays it, as a load does; its reply is a
  message of its own.
  Its image blocks are kept as files (`attachments_dir`) and sent as the TUI's attached
  images are (Kimi's `<image path=…>` form); a model that takes none is told in one line.
- approvals become `session/request_permission` with the TUI's answers: once, for the session
  (when the call has a session scope), reject; ExitPlanMode's carries the plan's Markdown as
  its content.
- a turn that fails (the model's error, a session file that cannot be written) answers with a
  JSON-RPC error (-32603) saying why; an unknown session is -32002 (resource not found), a bad
  request -32602. A cancelled turn ends every call it left open as `failed`.
- `session/set_mode` takes the approval modes `ask`, `auto-edit`, `plan`, `sandbox` (where the
  Shell sandbox works) and `yolo`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import mimetypes
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, cast

from acp import (
    PROTOCOL_VERSION,
    Agent,
    Client,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    SetSessionModeResponse,
    run_agent,
)
from acp.helpers import SessionUpdate, update_available_commands, update_current_mode
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    Implementation,
    PermissionOption,
    PromptCapabilities,
    ResourceContentBlock,
    SessionMode,
    SessionModeState,
    StopReason,
    TextContentBlock,
    TextResourceContents,
    ToolCallUpdate,
)

from kode_tui import __version__
from kode_tui.acp.commands import advertised, message
from kode_tui.acp.plan import plan_answer, plan_options
from kode_tui.acp.updates import (
    INTERRUPTED,
    CallIds,
    Messages,
    TurnUpdates,
    display_content,
    history_updates,
    plan_document,
    raw_input,
    session_info,
    tool_kind,
)
from kode_tui.config import Config, ModelChoice
from kode_tui.paths import too_wide
from kode_tui.soul.facade import (
    COMMANDS,
    AgentSession,
    ChatProvider,
    CommandPrompt,
    CommandReport,
    ImageAttachment,
    SessionLocked,
    TurnResult,
    attach_image,
    save_attachment,
)
from kode_tui.wire import events as ev

log = logging.getLogger(__name__)

_MODE_NAMES = {
    "ask": ("Ask", "Ask before every edit and command"),
    "auto-edit": ("Auto-edit", "Edit files in the work dir without asking; ask for commands"),
    "sandbox": (
        "Sandbox",
        "Edit files in the work dir and run commands in the sandbox without asking",
    ),
    "yolo": ("Yolo", "Approve every tool call; commands still cannot write protected files"),
    "plan": ("Plan", "Read-only: explore and write a plan for approval; no edits or commands"),
}

_STOP_REASONS: dict[str, StopReason] = {
    "done": "end_turn",
    "rejected": "end_turn",
    "blocked": "refusal",
    "max_steps": "max_turn_requests",
}
"""A turn's end as the client is told it; a turn that failed (`error`) is a JSON-RPC error."""

_UNTITLED = "Untitled"
"""A session's title while it has none (`Session.title`): not worth telling a client."""

_NO_SESSION_INFO = frozenset({"toad"})
"""Clients (by `clientInfo.name`) that refuse a `session_info_update`."""


@dataclass
class _Live:
    """One session the client opened: the facade and what turns its events into updates."""

    opened: AgentSession
    client_id: str
    """The session's id for the client: what it loaded it by (a folder's path, say)."""
    ids: CallIds = field(default_factory=CallIds)
    messages: Messages = field(default_factory=Messages)
    turns: TurnUpdates = field(init=False)
    shown: Any = None
    mode: str = ""
    """The approval mode the client was last told of."""
    title: str = ""
    """The title the client was last told of."""
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    plan: ev.PlanDisplay | None = None
    """The plan just shown: the approval request that follows is for it (ExitPlanMode)."""

    def __post_init__(self) -> None:
        self.turns = TurnUpdates(str(self.opened.work_dir), self.ids, self.messages)


class KodeAcpAgent:
    """The ACP `Agent`: each method is one of the protocol's requests."""

    def __init__(
        self, config: Config, choice: ModelChoice, *, provider: ChatProvider | None = None
    ) -> None:
        self._config = config
        self._choice = choice
        self._provider = provider
        self._client: Client | None = None
        self._sessions: dict[str, _Live] = {}
        self._background: set[asyncio.Future[None]] = set()
        self._titles = True
        """Whether the client takes `session_info_update` (see `initialize`)."""

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    # --- the protocol's requests -----------------------------------------------------------

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:  # fmt: skip
        # Toad (0.6.20) checks each update against its own protocol types, which lack
        # `session_info_update`, and answers it with an error: it keeps its own titles.
        name = getattr(client_info, "name", None)
        self._titles = name not in _NO_SESSION_INFO
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(embedded_context=True, image=True),
            ),
            auth_methods=[],
            agent_info=Implementation(name="kode-tui", title="kode-tui", version=__version__),
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        work_dir = _work_dir(cwd)
        _ignore_mcp_servers(mcp_servers)
        opened = await AgentSession.open(work_dir)
        opened.keep_if_empty = True  # the client holds its id, to load it in a later process
        live = await self._start(opened, opened.id)
        return NewSessionResponse(session_id=opened.id, modes=self._modes(live))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        work_dir = _work_dir(cwd)
        _ignore_mcp_servers(mcp_servers)
        live = self._sessions.get(session_id)
        if live is None:
            try:
                session = await AgentSession.named(work_dir, session_id)
            except LookupError as error:
                raise _not_found(str(error), session_id) from None
            except (FileNotFoundError, ValueError) as error:
                raise _error(str(error)) from None
            try:
                opened = await AgentSession.open(work_dir, session)
            except SessionLocked as error:
                raise _error(str(error)) from None
            if opened.read_only is not None:
                await opened.close()
                raise _error(f"{session.dir} cannot be written, so it cannot go on here.")
            opened.keep_if_empty = True
            live = await self._start(opened, session_id, announce=False)
        await self._replay(live)
        await self._announce(live)
        await self._tell_title(live)
        return LoadSessionResponse(modes=self._modes(live))

    async def set_session_mode(
        self, mode_id: str, session_id: str, **kwargs: Any
    ) -> SetSessionModeResponse:
        live = self._live(session_id)
        modes = live.opened.modes
        mode = next((mode for mode in modes if mode == mode_id), None)
        if mode is None:
            why = " (sandbox needs bubblewrap)" if mode_id == "sandbox" else ""
            raise _error(f"there is no mode {mode_id}{why}; the modes are {', '.join(modes)}.")
        live.mode = mode
        await live.opened.set_mode(mode)
        return SetSessionModeResponse()

    async def prompt(self, prompt: Sequence[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        live = self._live(session_id)
        if live.opened.turn_running:
            raise _error("a turn of this session is running; cancel it or wait for it.")
        text = _prompt_text(prompt)
        images = await _prompt_images(prompt)
        live.cancelled.clear()
        task = asyncio.ensure_future(self._turn(live, text, images))
        try:
            result = await task
        except asyncio.CancelledError:
            if not live.cancelled.is_set():
                raise
            result = None
        finally:
            await live.shown.join()  # every update of the turn is out before the answer
            for update in live.turns.calls.end(INTERRUPTED):  # nothing stays pending
                await self._send(live, update)
            await self._tell_title(live)
        if result is None or live.cancelled.is_set():
            return PromptResponse(stop_reason="cancelled")
        if result.stop_reason == "error":
            why = result.error or "the turn failed."
            raise RequestError(-32603, why, {"stopReason": "error", "error": why})
        return PromptResponse(stop_reason=_STOP_REASONS.get(result.stop_reason, "end_turn"))

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        live = self._sessions.get(session_id)
        if live is None:
            return
        live.cancelled.set()
        live.opened.interrupt()

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def close(self) -> None:
        """Close every session (their files made durable)."""
        for task in list(self._background):
            task.cancel()
        sessions, self._sessions = list(self._sessions.values()), {}
        for live in sessions:
            await live.opened.close()

    # --- sessions ------------------------------------------------------------------------------

    def _live(self, session_id: str) -> _Live:
        live = self._sessions.get(session_id)
        if live is None:
            message = f"there is no open session {session_id}; create or load it first."
            raise _not_found(message, session_id)
        return live

    async def _start(self, opened: AgentSession, client_id: str, *, announce: bool = True) -> _Live:
        live = _Live(opened, client_id)
        live.shown = opened.bus.subscribe(callback=lambda event: self._on_event(live, event))
        try:
            await opened.start(self._config, self._choice, provider=self._provider)
        except BaseException:
            live.shown.close()
            await opened.close()
            raise
        live.mode = opened.mode or ""
        self._sessions[client_id] = live
        if announce:
            # After the response: a client learns the session's id from it, and may drop
            # updates of a session it does not know yet.
            task = asyncio.ensure_future(self._announce(live))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        return live

    def _modes(self, live: _Live) -> SessionModeState:
        available = [
            SessionMode(id=mode, name=_MODE_NAMES[mode][0], description=_MODE_NAMES[mode][1])
            for mode in live.opened.modes
        ]
        return SessionModeState(
            current_mode_id=live.opened.mode or "ask", available_modes=available
        )

    async def _announce(self, live: _Live) -> None:
        await self._send(live, update_available_commands(advertised(live.opened)))

    async def _replay(self, live: _Live) -> None:
        """The conversation as it is now, every call with a fresh id, and its plan."""
        history, past = await live.opened.messages()
        work_dir = str(live.opened.work_dir)
        for update in history_updates(history, past, work_dir, live.ids, live.messages):
            await self._send(live, update)

    async def _say(self, live: _Live, text: str) -> None:
        """A reply of the agent's own (a command's), as a message of its own."""
        await self._send(live, live.messages.notice(text))

    async def _tell_title(self, live: _Live) -> None:
        """The session's title, for the client's list, when it has a new one."""
        title = live.opened.title
        if not self._titles or title == live.title or title == _UNTITLED:
            return
        live.title = title
        updated = datetime.fromtimestamp(live.opened.session.updated_at, UTC).isoformat()
        await self._send(live, session_info(title, updated))

    async def _send(self, live: _Live, update: SessionUpdate) -> None:
        assert self._client is not None  # connected before any request
        await self._client.session_update(session_id=live.client_id, update=update)

    # --- a turn --------------------------------------------------------------------------------

    async def _turn(
        self, live: _Live, text: str, images: Sequence[ImageAttachment] = ()
    ) -> TurnResult | None:
        opened = live.opened
        if text.startswith("/"):
            name, _, argument = text.strip().partition(" ")
            # The built-ins first: a repo's `.claude/commands/clear.md` must not stand for /clear.
            found = COMMANDS.find(opened, name, argument)
            if isinstance(found, CommandPrompt):
                return await opened.custom.run(found)
            if found is not None:
                done = (
                    found
                    if isinstance(found, CommandReport)
                    else await COMMANDS.run(opened, found, argument)
                )
                if "conversation" in done.changed:
                    await self._replay(live)
                await self._say(live, message(done))
                return TurnResult("done" if done.ok else "error", 0, None if done.ok else done.text)
        return await opened.run(text, images)

    async def _on_event(self, live: _Live, event: ev.Event) -> None:
        if isinstance(event, ev.ApprovalRequest):
            await self._ask(live, event)
            return
        if isinstance(event, ev.QuestionRequest):
            # ACP has no way to ask a question with options: the model asks in its text.
            event.unsupported()
            return
        if isinstance(event, ev.PlanDisplay):
            live.plan = event
            return
        if isinstance(event, ev.PermissionsChanged):
            if event.mode != live.mode:  # its mode changed in the agent (a session's start is none)
                live.mode = event.mode
                await self._send(live, update_current_mode(event.mode))
            return
        for update in live.turns.updates(event):
            await self._send(live, update)

    async def _ask(self, live: _Live, request: ev.ApprovalRequest) -> None:
        """The client's answer to an approval, as the TUI's panel would give it."""
        assert self._client is not None
        shown = live.turns.calls.get(request.tool_call_id)
        plan, live.plan = live.plan, None
        content = display_content(request.display, str(live.opened.work_dir))
        if plan is not None:
            content = plan_document(plan)
        options = [PermissionOption(option_id="approve", name="Allow once", kind="allow_once")]
        if request.plan is not None:
            options = plan_options(request.plan)
        elif request.scope_label:
            options.append(
                PermissionOption(
                    option_id="approve_for_session",
                    name=f"Allow for this session ({request.scope_label})",
                    kind="allow_always",
                )
            )
        if request.plan is None:
            options.append(PermissionOption(option_id="reject", name="Reject", kind="reject_once"))
        # A subagent's call is shown as the Agent call running it (`Calls.get`), titled by
        # what the subagent asks.
        own = shown is not None and request.agent_id is None
        call = ToolCallUpdate(
            tool_call_id=shown.acp_id if shown is not None else request.tool_call_id,
            title=shown.call.reading.title if shown is not None and own else _asking(request),
            kind=tool_kind(request.tool_name),
            status="pending",
            content=content or None,
            raw_input=raw_input(shown.call.arguments if shown is not None and own else ""),
        )
        asking = asyncio.ensure_future(
            self._client.request_permission(
                session_id=live.client_id, tool_call=call, options=options
            )
        )
        cancelled = asyncio.ensure_future(live.cancelled.wait())
        # Answered meanwhile (a switch to a mode that lets the call through); shielded, as
        # cancelling a wait must not cancel the request.
        answered = asyncio.ensure_future(asyncio.shield(request.wait()))
        try:
            waited: set[asyncio.Future[Any]] = {asking, cancelled, answered}
            await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancelled.cancel()
            answered.cancel()
        if not asking.done() or asking.cancelled() or asking.exception() is not None:
            asking.cancel()
            request.resolve("reject")
            return
        outcome = asking.result().outcome
        chosen = outcome.option_id if isinstance(outcome, AllowedOutcome) else "reject"
        if request.plan is not None:
            request.resolve(plan_answer(request.plan, chosen))
        elif chosen == "approve":
            request.resolve("approve")
        elif chosen == "approve_for_session" and request.scope_label:
            request.resolve("approve_for_session")
        else:
            request.resolve("reject")


# --- helpers -------------------------------------------------------------------------------------


def _error(message: str) -> RequestError:
    """A request the client got wrong: JSON-RPC's invalid params, with one sentence."""
    return RequestError(-32602, _sentence(message))


def _not_found(message: str, session_id: str) -> RequestError:
    """A session the client names that is not there: ACP's "resource not found"."""
    return RequestError(-32002, _sentence(message), {"sessionId": session_id})


def _sentence(message: str) -> str:
    return message[:1].upper() + message[1:]


def _work_dir(cwd: str) -> Path:
    path = Path(cwd)
    if not path.is_absolute():
        raise _error(f"the cwd must be an absolute path, not {cwd!r}.")
    if not path.is_dir():
        raise _error(f"the cwd {cwd} is not a directory.")
    why = too_wide(path)
    if why is not None:
        raise _error(f"the cwd {why}: open a project folder.")
    return path.resolve()


def _ignore_mcp_servers(servers: Sequence[Any] | None) -> None:
    # kode-tui connects the MCP servers of the user's config.toml alone (no client's, as no
    # project's): a client's list is noted in the log, not started.
    if servers:
        names = ", ".join(str(getattr(server, "name", "?")) for server in servers)
        log.info(
            "the client's MCP servers are not connected (kode-tui's config decides): %s", names
        )


def _prompt_text(prompt: Sequence[Any]) -> str:
    """The user's message: its text, with embedded files as text and links as their URI."""
    pieces: list[str] = []
    for block in prompt:
        if isinstance(block, TextContentBlock):
            pieces.append(block.text)
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                pieces.append(f"\n<file uri={resource.uri!r}>\n{resource.text}\n</file>\n")
        elif isinstance(block, ResourceContentBlock):
            pieces.append(block.uri)
    return "".join(pieces)


async def _prompt_images(prompt: Sequence[Any]) -> list[ImageAttachment]:
    """The prompt's images, each kept as a file (`save_attachment`) so the context names it;
    a block that is not an image the client said it is: a JSON-RPC error in one line."""
    images: list[ImageAttachment] = []
    for block in prompt:
        if not isinstance(block, ImageContentBlock):
            continue
        try:
            data = base64.b64decode(block.data, validate=True)
            suffix = mimetypes.guess_extension(block.mime_type) or ".img"
            path = await asyncio.to_thread(save_attachment, data, suffix)
            images.append(await attach_image(path))
        except (binascii.Error, ValueError, OSError) as error:  # ImageError is a ValueError
            raise _error(f"an image of the prompt cannot be read: {error}") from None
    return images


async def serve(
    config: Config,
    choice: ModelChoice,
    protocol_out: BinaryIO,
    *,
    provider: ChatProvider | None = None,
) -> None:
    """Answer the client on stdin and `protocol_out` (the real stdout) until stdin ends."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=50 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), protocol_out
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    agent = KodeAcpAgent(config, choice, provider=provider)
    try:
        # The package's Agent protocol lists the unstable methods too (fork, resume, list...);
        # its router answers "method not found" for those this agent leaves out.
        await run_agent(cast(Agent, agent), writer, reader)
    finally:
        with contextlib.suppress(Exception):
            await agent.close()


def _asking(request: ev.ApprovalRequest) -> str:
    """What an approval asks, with the subagent asking when it is one's."""
    if request.agent_id is None:
        return request.description
    return f"{request.subagent_type} {request.agent_id}: {request.description}"
