"""MCP servers (`[mcp.servers]`): their tools offered as `mcp__NAME__TOOL`, approved like Shell,
their results kept like any tool's; a server that fails or dies is one warning. Tested against
real servers: `mcp-server-time` (PyPI, a dev dependency), a small server of our own built with
the mcp package (tests/fixtures/mcp_test_server.py), and `@modelcontextprotocol/server-everything`
over streamable HTTP where node has it installed."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import types

from kode_tui.config import (
    Config,
    ConfigError,
    McpConfig,
    McpServerConfig,
    ModelChoice,
    load_config,
)
from kode_tui.print_mode import run_print
from kode_tui.soul.facade import AgentSession
from kode_tui.soul.llm.scripted import ScriptedProvider
from kode_tui.tools.mcp_client import expand
from kode_tui.tools.mcp_tools import MAX_NAME, tool_names, tool_output
from kode_tui.wire import events as ev

SCRIPTED = ModelChoice(name="scripted", model="scripted", source="flag")
BIN = Path(sys.executable).parent
TIME_SERVER = BIN / "mcp-server-time"
TEST_SERVER = Path(__file__).parents[1] / "fixtures" / "mcp_test_server.py"
NOW = "mcp__time__get_current_time"

needs_time_server = pytest.mark.skipif(
    not TIME_SERVER.exists(), reason="mcp-server-time is not installed (pip install -e .[dev])"
)


def mcp_config(servers: dict[str, dict[str, Any]], **settings: Any) -> Config:
    return Config(
        mcp=McpConfig(
            servers={name: McpServerConfig(**server) for name, server in servers.items()},
            **settings,
        )
    )


def time_server() -> dict[str, Any]:
    return {"command": str(TIME_SERVER)}


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def context_lines(opened: AgentSession) -> list[dict[str, Any]]:
    text = opened.session.context_file.read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def running_children(command: Path) -> list[int]:
    """This process's live children whose command line names `command` (Linux's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes()
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        state, parent = stat[0], int(stat[1])
        if parent == os.getpid() and state != "Z" and str(command).encode() in cmdline:
            found.append(int(entry.name))
    return found


def tool_results(opened: AgentSession) -> list[str]:
    return [
        json.dumps(line["content"]) for line in context_lines(opened) if line.get("role") == "tool"
    ]


# --- config ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "error"),
    [
        (
            '[mcp.servers.t]\ncommand = "x"\nurl = "http://a/mcp"\n',
            ":1: mcp.servers.t: give either",
        ),
        ("[mcp.servers.t]\nargs = []\n", ":1: mcp.servers.t: give either command"),
        ('[mcp.servers."my server"]\ncommand = "x"\n', ':1: mcp.servers."my server": an MCP'),
        ('[mcp.servers.t]\ncommand = "x"\nargz = []\n', "did you mean 'args'?"),
        ('[mcp.servers.t]\nurl = "ftp://a"\n', ":2: mcp.servers.t.url: should be an http"),
        ('[mcp.servers.t]\nurl = "http://a"\nargs = ["x"]\n', "args and env belong to a command"),
        # Server a's tool b__c and server a__b's tool c would both be mcp__a__b__c.
        ('[mcp.servers.a]\nurl = "http://a"\n[mcp.servers.a__b]\nurl = "http://b"\n', ":3: mcp"),
        ('[mcp.servers.a_]\ncommand = "x"\n', ":1: mcp.servers.a_: an MCP server's name may not"),
    ],
)
def test_a_bad_mcp_server_table_is_a_one_line_config_error(
    tmp_path: Path, table: str, error: str
) -> None:
    file = tmp_path / "config.toml"
    file.write_text(table)
    with pytest.raises(ConfigError) as raised:
        load_config(file)
    assert error in str(raised.value)
    assert "\n" not in str(raised.value)


def test_header_and_env_values_written_as_variables_come_from_the_environment() -> None:
    environ = {"TOKEN": "Bearer s3cret"}
    assert expand({"Authorization": "$TOKEN", "X-Plain": "as is", "X-Unset": "$NOPE"}, environ) == {
        "Authorization": "Bearer s3cret",
        "X-Plain": "as is",
        "X-Unset": "",
    }


# --- names and results -------------------------------------------------------------------------


def test_tool_names_hold_only_what_model_apis_take_and_fit_64_characters() -> None:
    names = tool_names("docs", ["get_current_time", "search.pages v2", "x" * 100, "x" * 99])
    assert names["get_current_time"] == "mcp__docs__get_current_time"
    assert names["search.pages v2"] == "mcp__docs__search_pages_v2"
    assert len(names["x" * 100]) == MAX_NAME and names["x" * 100] != names["x" * 99]
    # Two tools that read alike once changed still get two names; the one that needed no
    # change keeps its own, whatever the order of the listing.
    for listing in (["a.b", "a_b"], ["a_b", "a.b"]):
        names = tool_names("docs", listing)
        assert names["a_b"] == "mcp__docs__a_b" and names["a.b"] != names["a_b"]


def test_results_become_text_images_and_described_resources_like_other_tools() -> None:
    pixel = (
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
        "RU5ErkJggg=="
    )
    result = types.CallToolResult(
        content=[
            types.TextContent(type="text", text="\x1b[31mred"),
            types.ImageContent(type="image", data=pixel, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="demo://a", mime_type="text/plain", text="A"
                ),
            ),
            types.ResourceLink(type="resource_link", name="B", uri="demo://b"),
        ]
    )
    output = tool_output(result)
    assert not output.is_error
    assert output.output.splitlines() == [
        "\x1b[31mred",  # as the model reads it: the views show it escaped, as any tool output
        "[resource <demo://a> (text/plain)]",
        "A",
        "[resource link B <demo://b>]",
    ]
    assert [part.type for part in output.parts] == ["image_url"]
    huge = tool_output(
        types.CallToolResult(content=[types.TextContent(type="text", text="x\n" * 60_000)])
    )
    assert len(huge.output) <= 50_000 and "truncated" in huge.message
    failed = tool_output(
        types.CallToolResult(content=[types.TextContent(type="text", text="no")], is_error=True)
    )
    assert failed.is_error and failed.output == "no"


# --- real servers --------------------------------------------------------------------------------


@needs_time_server
async def test_print_mode_offers_a_server_tool_from_the_first_request_and_keeps_its_result(
    tmp_path: Path,
) -> None:
    config = mcp_config(
        {"time": time_server(), "broken": {"command": str(tmp_path / "no-such-server")}}
    )
    provider = ScriptedProvider(
        [
            {"tool_calls": [call(NOW, timezone="Europe/Paris")]},
            {"text": "It is late in Paris."},
        ]
    )
    opened = await AgentSession.open(tmp_path)
    out, err = io.StringIO(), io.StringIO()

    status = await run_print(
        opened, config, SCRIPTED, "time?", yolo=True, out=out, err=err, provider=provider
    )

    assert status == 0, err.getvalue()
    offered = [tool["function"]["name"] for tool in provider.requests[0].tools]
    assert NOW in offered and "mcp__time__convert_time" in offered
    assert not any(name.startswith("mcp__broken__") for name in offered)
    schema = next(t for t in provider.requests[0].tools if t["function"]["name"] == NOW)
    assert "timezone" in schema["function"]["parameters"]["properties"]
    warnings = [line for line in err.getvalue().splitlines() if "MCP server" in line]
    assert len(warnings) == 1 and "broken" in warnings[0] and "no such command" in warnings[0]
    assert "· time: get_current_time " in out.getvalue() and "✔" in out.getvalue()
    [result] = tool_results(opened)
    assert "Europe/Paris" in result and "datetime" in result
    assert list(tmp_path.rglob("mcp-time.log"))  # its stderr went there, not to the terminal
    if Path("/proc/self").exists():
        assert running_children(TIME_SERVER) == []  # closing the session stopped it


@needs_time_server
async def test_a_session_approval_covers_one_mcp_tool_and_a_tool_switched_off_is_not_offered(
    tmp_path: Path,
) -> None:
    script = [
        {"tool_calls": [call(NOW, timezone="UTC")]},
        {"tool_calls": [call(NOW, timezone="Asia/Tokyo")]},
        {
            "tool_calls": [
                call(
                    "mcp__time__convert_time",
                    source_timezone="UTC",
                    time="12:00",
                    target_timezone="Asia/Tokyo",
                )
            ]
        },
        {"text": "Done."},
        {"text": "Without the tool."},
    ]
    provider = ScriptedProvider(script)
    opened = await AgentSession.open(tmp_path)
    asked: list[str] = []

    def answer(event: ev.Event) -> None:
        if isinstance(event, ev.ApprovalRequest):
            asked.append(event.description)
            event.resolve("approve_for_session" if len(asked) == 1 else "approve")

    shown = opened.bus.subscribe(callback=answer)
    try:
        await opened.start(mcp_config({"time": time_server()}), SCRIPTED, provider=provider)
        result = await opened.run("what time is it?")
        assert result.stop_reason == "done"
        # The second call of the approved tool ran unasked; the other tool asked.
        assert len(asked) == 2
        assert asked[0].startswith(NOW) and '"UTC"' in asked[0]
        assert asked[1].startswith("mcp__time__convert_time")
        assert [p.scope for p in opened.permissions.grants()] == [f"mcp:{NOW}"]
        assert len(tool_results(opened)) == 3

        [server] = opened.mcp.status()
        assert server.state == "connected" and server.tokens > 0
        before = server.tokens
        await opened.mcp.set_enabled("time", False, tool=NOW)
        [server] = opened.mcp.status()
        assert 0 < server.tokens < before
        report = await opened.context_report()
        assert report is not None
        rows = {row.name: row.tokens for row in report.rows}
        assert rows["MCP server time (1 tool)"] == server.tokens
        assert sum(row.tokens for row in report.rows) == report.context_tokens

        await opened.run("again")
        offered = [tool["function"]["name"] for tool in provider.requests[-1].tools]
        assert NOW not in offered and "mcp__time__convert_time" in offered
    finally:
        shown.close()
        await opened.close()


async def test_a_server_that_dies_is_one_warning_the_model_reads_an_error_and_reconnect_revives_it(
    tmp_path: Path,
) -> None:
    server = {"command": sys.executable, "args": [str(TEST_SERVER)]}
    script = [
        {"tool_calls": [call("mcp__test__pixel")]},
        {"tool_calls": [call("mcp__test__die")]},
        {"tool_calls": [call("mcp__test__echo", text="still there?")]},
        {"text": "It died."},
        {"tool_calls": [call("mcp__test__echo", text="back")]},
        {"text": "Back."},
    ]
    provider = ScriptedProvider(script)
    opened = await AgentSession.open(tmp_path)
    warnings: list[str] = []
    shown = opened.bus.subscribe(ev.Warning, callback=lambda event: warnings.append(event.message))
    try:
        await opened.start(mcp_config({"test": server}), SCRIPTED, provider=provider, yolo=True)
        await opened.run("go")
        await shown.join()
        # The death is told when the client notices it, which may come after the turn.
        async with asyncio.timeout(30):
            while opened.mcp.status()[0].state != "failed" or not warnings:
                await asyncio.sleep(0.01)

        assert len([w for w in warnings if "MCP server test" in w]) == 1
        [server_info] = opened.mcp.status()
        assert server_info.state == "failed"
        pixel, died, echo = tool_results(opened)
        assert "image_url" in pixel and "a pixel" in pixel
        assert "ERROR" in died
        assert "not connected" in echo or "stopped answering" in echo
        assert "mcp__test__echo" not in [t["function"]["name"] for t in provider.requests[3].tools]

        revived = await opened.mcp.reconnect("test")
        assert revived.state == "connected"
        await opened.run("again")
        assert "back" in tool_results(opened)[-1]
    finally:
        shown.close()
        await opened.close()


def test_a_server_that_does_not_start_in_time_fails_with_the_timeout(tmp_path: Path) -> None:
    # Never answers, and goes when its stdin closes (as servers do when the client leaves).
    sleeper = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}

    async def scenario() -> tuple[list[Any], float]:
        opened = await AgentSession.open(tmp_path)
        provider = ScriptedProvider([{"text": "fine"}])
        config = mcp_config({"slow": sleeper}, startup_timeout=0.5)
        await opened.start(config, SCRIPTED, provider=provider)
        started = asyncio.get_running_loop().time()
        result = await opened.run("hi")
        waited = asyncio.get_running_loop().time() - started
        status = opened.mcp.status()
        await opened.close()
        assert result.stop_reason == "done"
        return status, waited

    [status], waited = asyncio.run(scenario())
    assert status.state == "failed" and "did not start within 0.5 s" in status.error
    assert waited < 5


# --- streamable HTTP ----------------------------------------------------------------------------


@pytest.fixture
def http_server() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Our test server over streamable HTTP: its URL and its process."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(TEST_SERVER), "http", str(port)],
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
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        process.kill()
        process.wait()


async def test_an_http_server_gets_headers_from_the_environment_and_its_loss_is_one_warning(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    http_server: tuple[str, subprocess.Popen[str]],
) -> None:
    url, process = http_server
    monkeypatch.setenv("KODE_TEST_HEADER", "Bearer not-a-secret")
    provider = ScriptedProvider(
        [
            {"tool_calls": [call("mcp__web__header", key="authorization")]},
            {"text": "Seen."},
            {"tool_calls": [call("mcp__web__echo", text="anyone?")]},
            {"text": "Gone."},
        ]
    )
    opened = await AgentSession.open(tmp_path)
    warnings: list[str] = []
    shown = opened.bus.subscribe(ev.Warning, callback=lambda event: warnings.append(event.message))
    try:
        server = {"url": url, "headers": {"Authorization": "$KODE_TEST_HEADER"}}
        await opened.start(mcp_config({"web": server}), SCRIPTED, provider=provider, yolo=True)
        await opened.run("who am I?")
        # The server got the header's value; a value taken from the environment is masked as
        # an API key is, wherever it shows up.
        assert "[masked: KODE_TEST_HEADER]" in tool_results(opened)[0]

        process.terminate()
        process.wait(timeout=10)
        result = await opened.run("still there?")
        await shown.join()
        assert result.stop_reason == "done"
        assert "stopped answering" in tool_results(opened)[1]
        assert len([w for w in warnings if "MCP server web" in w]) == 1
        assert opened.mcp.status()[0].state == "failed"
    finally:
        shown.close()
        await opened.close()


# --- streamable HTTP: @modelcontextprotocol/server-everything --------------------------------

EVERYTHING = "@modelcontextprotocol/server-everything"
NODE_PREFIX = Path(os.environ.get("KODE_TUI_TEST_NODE_PREFIX", Path(__file__).parents[1] / ".node"))
"""Where `npm install --prefix DIR @modelcontextprotocol/server-everything` put it."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def everything() -> Iterator[str]:
    """The URL of server-everything over streamable HTTP (skipped where it is not installed)."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("node's npx is not installed")
    if not (NODE_PREFIX / "node_modules" / EVERYTHING).is_dir():
        pytest.skip(
            f"{EVERYTHING} is not installed: npm install --prefix {NODE_PREFIX} {EVERYTHING}"
        )
    port = _free_port()
    process = subprocess.Popen(
        [npx, "--no-install", EVERYTHING, "streamableHttp"],
        cwd=NODE_PREFIX,
        env={**os.environ, "PORT": str(port)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # npx runs node as its child: both are stopped as a group
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if "listening" in line:
                break
        else:
            pytest.fail(f"{EVERYTHING} did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)


async def test_a_streamable_http_server_gives_its_tools_and_their_images(
    tmp_path: Path, everything: str
) -> None:
    provider = ScriptedProvider(
        [
            {"tool_calls": [call("mcp__everything__echo", message="hi \x1b[2J")]},
            {"tool_calls": [call("mcp__everything__get-tiny-image")]},
            {"tool_calls": [call("mcp__everything__get-resource-reference")]},
            {"text": "Seen."},
        ]
    )
    opened = await AgentSession.open(tmp_path)
    config = mcp_config({"everything": {"url": everything, "headers": {"X-Test": "$HOME"}}})
    try:
        await opened.start(config, SCRIPTED, provider=provider, yolo=True)
        result = await opened.run("show me")
        assert result.stop_reason == "done"
        echo, image, resource = tool_results(opened)
        assert "Echo: hi \\u001b[2J" in echo
        assert "image_url" in image and "data:image/png;base64," in image
        assert "[resource <demo://resource/" in resource
        [server] = opened.mcp.status()
        assert server.state == "connected" and len(server.tools) > 5
    finally:
        await opened.close()


# --- /mcp in the TUI ---------------------------------------------------------------------------


def test_a_warning_quoting_a_server_shows_its_escape_sequences_escaped() -> None:
    from kode_tui.ui.widgets.blocks import NoticeBlock

    block = NoticeBlock("⚠ MCP server x: exited (\x1b[2Jgone\x07)", kind="warning")
    assert str(block.visual) == "⚠ MCP server x: exited (␛[2Jgone␇)"


async def test_the_mcp_screen_lists_servers_and_tokens_and_switches_a_tool_off(
    tmp_path: Path,
) -> None:
    from kode_tui.soul.llm.demo import DemoProvider
    from kode_tui.ui.screens.mcp import McpScreen
    from tests.ui_helpers import make_app, ready, screen_text, send, wait_for

    config = mcp_config(
        {
            "test": {"command": sys.executable, "args": [str(TEST_SERVER)]},
            "broken": {"command": str(tmp_path / "no-such-server")},
        }
    )
    app = make_app(tmp_path, DemoProvider(delay=0), config)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        opened = app.agent_session
        assert opened is not None
        await wait_for(pilot, lambda: [s.state for s in opened.mcp.status()] == [
            "connected", "failed"
        ])  # fmt: skip
        await send(pilot, "/mcp")
        await wait_for(pilot, lambda: isinstance(app.screen, McpScreen))
        text = screen_text(app)
        [test, _] = opened.mcp.status()
        assert f"test  5 tools · {test.tokens:,} tokens" in text
        assert "✓ mcp__test__echo" in text and "✓ mcp__test__die" in text
        assert "✗ broken  failed: no such command" in text
        assert "Space switch off/on" in text  # the keys fit 80 columns

        await pilot.press("down")  # the first tool, echo: its description shows
        await wait_for(pilot, lambda: "Say the text back." in screen_text(app))
        await pilot.press("space")
        await wait_for(pilot, lambda: not opened.mcp.status()[0].tools[0].enabled)
        assert "test  4 tools" in screen_text(app)
        await pilot.press("escape")
