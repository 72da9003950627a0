"""How kode-tui reaches an MCP server: the transports `McpServer` hands the SDK's `Client`, each
reading a server's messages with a cap on one message's size (`MAX_MESSAGE_BYTES`).

A stdio server is run here rather than by the SDK's `stdio_client`, which holds a line of stdout
whole however long it grows (joining its pieces in quadratic time: a 100 MiB result took 72 s and
570 MiB before kode-tui could cut it) and hands the server the log file as its stderr, so what a
server prints there (its token, say) reached the session folder unmasked. Here stdout is split
into lines as it arrives; a line over the cap is dropped as it goes on arriving (only its first
and last bytes are kept, to find the request it answers) and that request gets an error that
names the cap. Stderr is read the same way, line by line (a key split between two reads is
whole again in its line), masked (`kode_tui.masking`) and written to `mcp-NAME.log`.

A streamable HTTP server gets an HTTP client whose response bodies are counted as they are read:
a JSON body (or one line of an event stream) over the cap fails its request with the same error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import types
from mcp.client.stdio import get_default_environment
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage

from kode_tui import masking
from kode_tui.humanize import format_size
from kode_tui.tools.mcp_tools import MAX_MESSAGE_BYTES, too_large

log = logging.getLogger(__name__)

MAX_LOG_LINE = 4096
"""A line of a server's stderr is written to its log up to this many bytes."""
TOO_LARGE_CODE = -32001
"""The JSON-RPC error code of the error a dropped message's request gets (a server error)."""
_ENDS_KEPT = 4096
"""Of a line dropped for its size, the bytes kept at each end: the request id is there."""
_READ = 1 << 16
_STOP_WAIT = 2.0
"""Seconds a server has to exit once its stdin is closed, then once sent SIGTERM."""
_LOG_DRAIN_WAIT = 1.0
"""Seconds the log waits, once the server is gone, for a child that still holds its stderr."""
_ID = rb'(-?\d+|"(?:[^"\\]|\\.)*")'
_ID_FIRST = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID)
"""The id of a response written `{"jsonrpc": "2.0", "id": ...` (Python SDK servers)."""
_ID_LAST = re.compile(rb'"id"\s*:\s*' + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z')
"""The id of a response written `..., "jsonrpc": "2.0", "id": ...}` (TypeScript SDK servers)."""

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@dataclass(slots=True)
class Cut:
    """A line dropped for its size: its first and last bytes, and how long it was."""

    head: bytes
    tail: bytes
    size: int


class Lines:
    """Splits a byte stream into lines (without their `\\n`); a line longer than `limit` is not
    kept: a `Cut` stands for it, holding `keep` bytes of its start and `_ENDS_KEPT` of its end,
    so memory stays bounded however long it grows."""

    def __init__(self, limit: int, keep: int) -> None:
        self.limit = limit
        self.keep = keep
        self._line = bytearray()
        self._cut: Cut | None = None

    def feed(self, data: bytes) -> list[bytes | Cut]:
        """The lines `data` ends."""
        ended: list[bytes | Cut] = []
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            self._add(data[start:end])
            ended.append(self._take())
            start = end + 1
        self._add(data[start:])
        return ended

    def end(self) -> list[bytes | Cut]:
        """The last line, when the stream ended without a `\\n`."""
        return [self._take()] if self._line or self._cut is not None else []

    def _add(self, piece: bytes) -> None:
        if self._cut is not None:
            self._cut.size += len(piece)
            self._cut.tail = (self._cut.tail + piece[-_ENDS_KEPT:])[-_ENDS_KEPT:]
            return
        self._line += piece
        if len(self._line) > self.limit:
            line = self._line
            self._cut = Cut(bytes(line[: self.keep]), bytes(line[-_ENDS_KEPT:]), len(line))
            self._line = bytearray()

    def _take(self) -> bytes | Cut:
        taken: bytes | Cut = self._cut if self._cut is not None else bytes(self._line)
        self._line, self._cut = bytearray(), None
        return taken


def cut_request_id(cut: Cut) -> types.RequestId | None:
    """The id of the response a dropped line held, when its first or last bytes show it."""
    found = _ID_FIRST.match(cut.head) or _ID_LAST.search(cut.tail)
    if found is None:
        return None
    value = json.loads(found.group(1))
    return value if isinstance(value, int | str) else None


class StderrLog:
    """A stdio server's `mcp-NAME.log`: its stderr line by line, secrets masked, each line cut
    at MAX_LOG_LINE bytes; with no path, nothing. The owner closes it, after the transport."""

    def __init__(self, path: Path | None, target: str) -> None:
        self._fd: int | None = None
        self._lines = Lines(MAX_LOG_LINE, MAX_LOG_LINE)
        if path is not None:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            self._write([f"--- {stamp} kode-tui starts {masking.mask(target)}"])

    @property
    def kept(self) -> bool:
        """Whether it writes to a file (the server's stderr is worth reading)."""
        return self._fd is not None

    def feed(self, data: bytes) -> None:
        self._write([_log_line(line) for line in self._lines.feed(data)])

    def close(self) -> None:
        """Write the last line (one with no `\\n`) and close the file."""
        self._write([_log_line(line) for line in self._lines.end()])
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _write(self, lines: list[str]) -> None:
        if self._fd is None or not lines:
            return
        try:
            os.write(self._fd, "".join(f"{line}\n" for line in lines).encode())
        except OSError as error:  # a full disk: the server goes on, its log does not
            log.warning("could not write an MCP server's log: %s", error)


def _log_line(line: bytes | Cut) -> str:
    if isinstance(line, Cut):
        # Masked, and cut before a key whose start the kept bytes may end with.
        head = masking.mask_head(line.head.decode("utf-8", errors="replace"))
        return f"{head} … [line cut: it was {format_size(line.size)}]"
    return masking.mask(line.decode("utf-8", errors="replace").rstrip("\r"))


@dataclass(frozen=True, slots=True)
class StdioServer:
    """How to start a stdio server."""

    command: str
    args: list[str]
    env: dict[str, str]
    """Over the SDK's safe defaults (HOME, PATH, ...): the server gets no other variable."""
    cwd: Path


@contextlib.asynccontextmanager
async def stdio_transport(server: StdioServer, errlog: StderrLog) -> AsyncIterator[Streams]:
    """Start `server` and connect to it over stdin/stdout; on leaving, close its stdin, give it
    time to exit, then stop its process group (SIGTERM, then SIGKILL), as the MCP spec says.
    Raises OSError when the command cannot be started."""
    process = await anyio.open_process(
        [server.command, *server.args],
        env=get_default_environment() | server.env,
        cwd=server.cwd,
        stderr=subprocess.PIPE if errlog.kept else subprocess.DEVNULL,
        start_new_session=True,  # its own process group: stopping it stops its children
    )
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    connection = _Connection(process, read_writer, write_reader, errlog)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(connection.read_stdout)
        tasks.start_soon(connection.write_stdin)
        tasks.start_soon(connection.read_stderr)
        try:
            yield read_stream, write_stream
        finally:
            # Shielded: a caller cancelled (a start-up timeout) must not leave the server running.
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(0.5):
                    await connection.writer_done.wait()
                await _stop(process)
                with anyio.move_on_after(_LOG_DRAIN_WAIT):
                    await connection.stderr_done.wait()
            tasks.cancel_scope.cancel()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(Exception):
                await stream.aclose()


class _Connection:
    """The three pipes of a stdio server, each read or written by a task of its own."""

    def __init__(
        self,
        process: Process,
        read_writer: MemoryObjectSendStream[SessionMessage | Exception],
        write_reader: MemoryObjectReceiveStream[SessionMessage],
        errlog: StderrLog,
    ) -> None:
        self._process = process
        self._read_writer = read_writer
        self._write_reader = write_reader
        self._errlog = errlog
        self._pending: set[types.RequestId | None] = set()
        """The requests sent and not answered yet."""
        self.writer_done = anyio.Event()
        self.stderr_done = anyio.Event()

    async def read_stdout(self) -> None:
        assert self._process.stdout is not None
        lines = Lines(MAX_MESSAGE_BYTES, _ENDS_KEPT)
        delivering = True
        async with self._read_writer:
            with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
                while True:
                    chunk = await self._process.stdout.receive(_READ)
                    for line in lines.feed(chunk):
                        # Once the session is gone the rest is read and dropped: a server
                        # blocked on a full pipe could not see its stdin close and exit.
                        delivering = delivering and await self._deliver(line)

    async def _deliver(self, line: bytes | Cut) -> bool:
        """Hand `line` to the session; False once it no longer listens."""
        message: SessionMessage | Exception | None
        if isinstance(line, Cut):
            message = self._dropped(line)
        elif not line.strip():
            return True
        else:
            try:
                parsed = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except ValueError as error:  # the session reports it; the connection goes on
                message = error
            else:
                if isinstance(parsed, types.JSONRPCResponse | types.JSONRPCError):
                    self._pending.discard(parsed.id)
                message = SessionMessage(parsed)
        if message is None:
            return True
        try:
            await self._read_writer.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    def _dropped(self, cut: Cut) -> SessionMessage | None:
        """The error that answers the request a dropped line answered, when it is known."""
        request = cut_request_id(cut)
        if request is None and len(self._pending) == 1:
            [request] = self._pending
        log.warning("an MCP server sent a message of %s: dropped", format_size(cut.size))
        if request is None or request not in self._pending:
            return None
        self._pending.discard(request)
        error = types.ErrorData(code=TOO_LARGE_CODE, message=too_large(cut.size))
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request, error=error))

    async def write_stdin(self) -> None:
        assert self._process.stdin is not None
        try:
            async with self._write_reader:
                async for sent in self._write_reader:
                    message = sent.message
                    if isinstance(message, types.JSONRPCRequest):
                        self._pending.add(message.id)
                    elif (
                        isinstance(message, types.JSONRPCNotification)
                        and message.method == "notifications/cancelled"
                    ):
                        # The session no longer waits for it: never a cut result's answer.
                        self._pending.discard((message.params or {}).get("requestId"))
                    data = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await self._process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server stopped reading: end the session's stream, so no request waits forever.
            await self._read_writer.aclose()
        finally:
            self.writer_done.set()

    async def read_stderr(self) -> None:
        try:
            if self._process.stderr is not None:
                with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, OSError):
                    while True:
                        self._errlog.feed(await self._process.stderr.receive(_READ))
        finally:
            self.stderr_done.set()


async def _stop(process: Process) -> None:
    """Close the server's stdin, wait for it to exit, then signal its group (TERM, then KILL)."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    for sent in (None, signal.SIGTERM, signal.SIGKILL):
        if sent is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sent)
        if await _exited(process, _STOP_WAIT):
            return
    log.warning("MCP server process %d is still alive after SIGKILL", process.pid)


async def _exited(process: Process, timeout: float) -> bool:
    # Polled, not `process.wait()`: that also waits for the pipes to close, which a child of
    # the server that inherited them can hold open long after the server itself is gone.
    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
        return True
    return False


# --- streamable HTTP -------------------------------------------------------------------------


class BodyError(httpx2.SSEError, httpx2.StreamError):
    """A response body over the cap, or one sent in an encoding not asked for. Of both kinds the
    SDK turns into an error for the request it answers (an event stream's failure, a JSON
    body's), with this message in it."""


def capped_http_client(headers: dict[str, str] | None) -> httpx2.AsyncClient:
    """The SDK's HTTP client for an MCP server (its timeouts), whose response bodies are counted
    as they arrive and fail at MAX_MESSAGE_BYTES: a JSON body in all, an event stream per line
    (each event is one message)."""
    client = create_mcp_http_client(headers={**(headers or {}), "Accept-Encoding": "gzip, deflate"})
    # A hook sees every response, through a proxy or not, before its body is read.
    client.event_hooks = {"response": [_cap_body]}
    return client


async def _cap_body(response: httpx2.Response) -> None:
    kind = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding:
        # Unpacked here as it is counted, not by httpx: a small compressed body can be huge.
        del response.headers["content-encoding"]
    assert isinstance(response.stream, httpx2.AsyncByteStream)
    response.stream = _CappedStream(
        response.stream, per_line=kind == "text/event-stream", encoding=encoding
    )


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, *, per_line: bool, encoding: str) -> None:
        self._inner = inner
        self._per_line = per_line
        self._encoding = encoding

    async def __aiter__(self) -> AsyncIterator[bytes]:
        unpack = _unpacker(self._encoding)
        count = 0
        async for raw in self._inner:
            for chunk in unpack(raw):
                if self._per_line and (end := max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))) >= 0:
                    count = len(chunk) - end - 1
                else:
                    count += len(chunk)
                if count > MAX_MESSAGE_BYTES:
                    raise BodyError(too_large())
                yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _unpacker(encoding: str) -> Callable[[bytes], Iterator[bytes]]:
    """A body's raw bytes to its decoded pieces, each at most _READ bytes, made as they are
    asked for: a compressed body is counted as it unpacks, never unpacked whole first."""
    if encoding in ("", "identity"):
        return lambda raw: iter((raw,))
    if encoding not in ("gzip", "x-gzip", "deflate"):
        raise BodyError(f"the server sent a body in an encoding not asked for: {encoding}")
    unpack = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib, told by its header

    def pieces(raw: bytes) -> Iterator[bytes]:
        try:
            yield unpack.decompress(raw, _READ)
            while unpack.unconsumed_tail:
                yield unpack.decompress(unpack.unconsumed_tail, _READ)
        except zlib.error as error:
            raise BodyError(f"the server sent a body that does not unpack: {error}") from None

    return pieces
