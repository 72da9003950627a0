"""What an MCP server cannot make kode-tui do: write a key in clear to its log, make kode-tui hold
a huge answer whole or send a huge description with every request, or give two tools one name.
Against a bare JSON-RPC server of our own (tests/fixtures/mcp_raw_server.py) that misbehaves on
request, over real pipes."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kode_tui import masking
from kode_tui.config import McpConfig, McpServerConfig
from kode_tui.soul.facade import AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.tools.mcp_client import McpServers
from kode_tui.tools.mcp_tools import MAX_DESCRIPTION, MAX_MESSAGE_BYTES, MAX_NAME
from kode_tui.tools.mcp_transport import MAX_LOG_LINE, Cut, StderrLog, cut_request_id
from tests.tools.test_mcp import SCRIPTED, TEST_SERVER, _free_port, call, mcp_config, tool_results

RAW_SERVER = Path(__file__).parents[1] / "fixtures" / "mcp_raw_server.py"


def raw_server(**spec: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(RAW_SERVER), json.dumps(spec)]}


# --- the server's stderr ------------------------------------------------------------------------


async def test_a_servers_stderr_reaches_its_log_with_every_key_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given = "tok-from-the-environment-0123456789"
    literal = "ghp_written_in_the_config_0123456789"
    monkeypatch.setenv("KODE_TEST_SERVICE_TOKEN", given)
    server = raw_server(stderr=["starting with $SERVICE_TOKEN", "github: $GITHUB_TOKEN"])
    server["env"] = {"SERVICE_TOKEN": "$KODE_TEST_SERVICE_TOKEN", "GITHUB_TOKEN": literal}
    opened = await AgentSession.open(tmp_path)
    try:
        provider = ScriptedProvider([{"text": "fine"}])
        await opened.start(mcp_config({"raw": server}), SCRIPTED, provider=provider)
        await opened.run("hi")
        assert opened.mcp.status()[0].state == "connected"
        await opened.close()  # the server stops, its last words are written

        [log] = tmp_path.rglob("mcp-raw.log")
        text = log.read_text()
        assert "starting with [masked: KODE_TEST_SERVICE_TOKEN]" in text
        assert "github: [masked: GITHUB_TOKEN]" in text
        assert given not in text and literal not in text
    finally:
        await opened.close()
        masking.forget("GITHUB_TOKEN")


def test_the_log_masks_a_key_split_between_reads_and_cuts_long_lines_before_a_key(
    tmp_path: Path,
) -> None:
    key = "sk-test-" + "0123456789" * 4
    masking.register("KODE_TEST_LOG_KEY", key)
    try:
        path = tmp_path / "mcp-x.log"
        log = StderrLog(path, f"server --key {key}")
        log.feed(b"first " + key[:11].encode())
        log.feed(key[11:].encode() + b" end\nsecond\r\n")
        log.feed(b"x" * (MAX_LOG_LINE - 12) + key.encode() + b"y" * 100_000 + b"\n")
        log.feed(b"no line break at the end")
        log.close()
    finally:
        masking.forget("KODE_TEST_LOG_KEY")

    header, first, second, cut, last = path.read_text().splitlines()
    assert header.endswith("kode-tui starts server --key [masked: KODE_TEST_LOG_KEY]")
    assert first == "first [masked: KODE_TEST_LOG_KEY] end" and second == "second"
    assert cut.startswith("x" * 1000) and cut.endswith("… [line cut: it was 102 KiB]")
    assert key[:4] not in cut and len(cut.encode()) < MAX_LOG_LINE + 100
    assert last == "no line break at the end"


# --- results and descriptions, capped while read ----------------------------------------------


async def test_a_huge_result_is_dropped_as_it_arrives_and_the_model_is_told_the_cap(
    tmp_path: Path,
) -> None:
    huge = 8 * MAX_MESSAGE_BYTES
    provider = ScriptedProvider(
        [
            {"tool_calls": [call("mcp__raw__huge")]},
            {"tool_calls": [call("mcp__raw__echo", text="still there")]},
            {"text": "Done."},
        ]
    )
    opened = await AgentSession.open(tmp_path)
    config = mcp_config({"raw": raw_server(huge=huge)})
    try:
        await opened.start(config, SCRIPTED, provider=provider, yolo=True)
        await opened.mcp.ready()
        tracemalloc.start()
        try:
            result = await opened.run("go")
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert result.stop_reason == "done"
        dropped, echoed = tool_results(opened)
        assert "The result of huge was dropped: it was over 8.0 MiB, the limit of one MCP" in (
            dropped
        )
        assert "still there" in echoed  # the connection goes on past the dropped line
        assert peak < huge / 2  # never held whole
    finally:
        await opened.close()


@pytest.fixture(params=["event-stream", "json"])
def http_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Our test server over streamable HTTP, answering in event streams or in JSON bodies."""
    port = _free_port()
    mode = ["json"] if request.param == "json" else []
    process = subprocess.Popen(
        [sys.executable, str(TEST_SERVER), "http", str(port), *mode],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if "Uvicorn running" in line:
                break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.kill()
        process.wait()


async def test_an_http_servers_huge_answer_fails_its_call_with_the_cap(
    tmp_path: Path, http_url: str
) -> None:
    provider = ScriptedProvider(
        [
            {"tool_calls": [call("mcp__web__huge", size=MAX_MESSAGE_BYTES + 1000)]},
            {"tool_calls": [call("mcp__web__echo", text="still there")]},
            {"text": "Done."},
        ]
    )
    opened = await AgentSession.open(tmp_path)
    try:
        config = mcp_config({"web": {"url": http_url}})
        await opened.start(config, SCRIPTED, provider=provider, yolo=True)
        await opened.run("go")
        dropped, echoed = tool_results(opened)
        assert "The result of huge was dropped: it was over 8.0 MiB, the limit of one MCP" in (
            dropped
        )
        assert "still there" in echoed
    finally:
        await opened.close()


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(b" " * (64 << 20), compresslevel=1)


class _Bomb(BaseHTTPRequestHandler):
    """Answers every POST with 64 MiB of JSON whitespace, gzipped to 64 KiB."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        body = _bomb()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


async def test_a_compressed_http_answer_is_counted_as_it_unpacks(tmp_path: Path) -> None:
    _bomb()  # made before memory is traced: the server is a thread of this process
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Bomb)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/mcp"
    servers = McpServers(
        McpConfig(servers={"bomb": McpServerConfig(url=url)}), work_dir=tmp_path, log_dir=None
    )
    try:
        tracemalloc.start()
        try:
            servers.start()
            await servers.ready()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        [status] = servers.status()
        assert status.state == "failed" and "the limit of one MCP message" in status.error
        assert peak < 32 << 20  # never unpacked whole
    finally:
        await servers.close()
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize(
    ("head", "tail", "found"),
    [
        (b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"text": "xx', b'xx"}]}}', 7),
        (
            b'{"result": {"content": [{"id": 3, "text": "xx',
            b'xx"}]}, "jsonrpc":"2.0","id":"a"}',
            "a",
        ),
        (b'{"result": {"content": [{"text": "xx', b'xx", "id": 5}]}}', None),
    ],
)
def test_a_dropped_lines_request_id_is_read_from_either_end(
    head: bytes, tail: bytes, found: object
) -> None:
    assert cut_request_id(Cut(head, tail, 1 << 30)) == found


async def test_descriptions_and_schemas_are_capped_and_a_huge_listing_fails_its_server(
    tmp_path: Path,
) -> None:
    tools = [["wordy", 100_000, 0], ["schemed", "Has a big schema.", 100_000]]
    config = mcp_config(
        {
            "raw": raw_server(tools=tools),
            "vast": raw_server(tools=[["vast", 20 << 20, 0]]),
        }
    )
    provider = ScriptedProvider([{"text": "Fine."}])
    opened = await AgentSession.open(tmp_path)
    try:
        await opened.start(config, SCRIPTED, provider=provider)
        await opened.run("hi")
        offered = {
            tool["function"]["name"]: tool["function"] for tool in provider.requests[0].tools
        }
        wordy, schemed = offered["mcp__raw__wordy"], offered["mcp__raw__schemed"]
        assert len(wordy["description"]) == MAX_DESCRIPTION
        assert wordy["description"].endswith("… (cut to 2048 characters)")
        assert schemed["parameters"] == {"type": "object"}
        assert (
            "Its input schema, 98 KiB, is over 32 KiB and is not shown" in (schemed["description"])
        )
        assert not any(name.startswith("mcp__vast__") for name in offered)
        raw, vast = opened.mcp.status()
        assert raw.state == "connected"
        assert vast.state == "failed" and "the limit of one MCP message" in vast.error
    finally:
        await opened.close()


# --- offered names ----------------------------------------------------------------------------


async def test_a_tool_named_like_anothers_cut_and_hashed_name_still_gets_a_name_of_its_own(
    tmp_path: Path,
) -> None:
    long = "x" * 100
    digest = hashlib.sha256(f"raw\0{long}".encode()).hexdigest()[:8]
    lookalike = f"mcp__raw__{long}"[: MAX_NAME - 9][len("mcp__raw__") :] + f"_{digest}"
    # Listed first, the lookalike takes its name before the long one is hashed into it.
    tools = [[lookalike, "Named like the other one's hash.", 0], [long, "Named too long.", 0]]
    config = McpConfig(servers={"raw": McpServerConfig(**raw_server(tools=tools))})
    servers = McpServers(config, work_dir=tmp_path, log_dir=None)
    servers.start()
    try:
        await servers.ready()
        names = [tool.name for tool in servers.servers["raw"].tools]
        assert len(names) == 2 and len(set(names)) == 2
        assert all(len(name) <= MAX_NAME for name in names)
        assert f"mcp__raw__{lookalike}" in names  # a name that needed no change keeps it
    finally:
        await servers.close()
