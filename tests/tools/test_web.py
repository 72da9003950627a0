"""FetchURL and SearchWeb against a loopback HTTP server the test starts: Markdown from HTML, the
size and time caps, and the approvals of private addresses, redirects included."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kode_tui import masking
from kode_tui.config import Config, ConfigError, WebConfig, load_config
from kode_tui.humanize import format_size
from kode_tui.session.state import SessionState
from kode_tui.soul.agent import make_toolset
from kode_tui.soul.approval import Approval
from kode_tui.soul.facade.config_watch import what_changed
from kode_tui.tools.base import ToolEnv, ToolError
from kode_tui.tools.shell import Shell, ShellParams
from kode_tui.tools.web import FetchParams, FetchURL
from kode_tui.tools.web_address import why_private
from kode_tui.wire import WireBus
from kode_tui.wire import events as ev
from tests.soul_helpers import call, make_rig

LOCALHOST_CERTIFICATE = Path(__file__).parents[1] / "fixtures" / "web" / "localhost.pem"
"""A self-signed certificate (and its key) for the DNS name `localhost` alone, valid to 2126."""

Handler = Callable[[BaseHTTPRequestHandler], None]

PAGE = b"""<!doctype html><html><head><title>Release notes</title>
<style>body { color: red }</style><script>stealCookies()</script></head>
<body><h1>Release 2.0</h1><p>The <b>new</b> parser is <a href="/docs">documented</a>.</p>
<ul><li>faster</li><li>smaller</li></ul>
<table><tr><th>os</th><th>tier</th></tr><tr><td>linux</td><td>1</td></tr></table>
<pre><code>pip install thing</code></pre><noscript>enable js</noscript></body></html>"""


class WebServer:
    """A loopback server whose paths answer with the test's handlers, each request recorded."""

    def __init__(self, certificate: Path | None = None, address: str = "127.0.0.1") -> None:
        self.routes: dict[str, Handler] = {}
        self.paths: list[str] = []
        self.release = threading.Event()
        """Set at the end: a slow handler waits on it rather than on a clock."""
        server = self

        class _Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.paths.append(self.path)
                route = server.routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                # The client may stop reading (what a cap does).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    route(self)

            do_POST = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = _Server6((address, 0), _Handler) if ":" in address else None
        self._http = self._http or ThreadingHTTPServer((address, 0), _Handler)
        self.scheme = "http"
        if certificate is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certificate)
            self._http.socket = context.wrap_socket(self._http.socket, server_side=True)
            self.scheme = "https"
        self._http.daemon_threads = True
        self.port = self._http.server_address[1]
        self._thread = threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        host = f"[{host}]" if ":" in host else host
        return f"{self.scheme}://{host}:{self.port}{path}"

    def page(self, path: str, body: bytes, content_type: str = "text/html; charset=utf-8") -> None:
        self.routes[path] = lambda request: send_body(request, body, content_type)

    def redirect(self, path: str, location: str) -> None:
        def answer(request: BaseHTTPRequestHandler) -> None:
            request.send_response(302)
            request.send_header("Location", location)
            request.send_header("Content-Length", "0")
            request.end_headers()

        self.routes[path] = answer

    def close(self) -> None:
        self.release.set()
        self._http.shutdown()
        self._http.server_close()


class _Server6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def send_body(request: BaseHTTPRequestHandler, body: bytes, content_type: str) -> None:
    """Answer `request` with `body`, whole, as `content_type`."""
    request.send_response(200)
    request.send_header("Content-Type", content_type)
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    request.wfile.write(body)


def ipv6_loopback() -> bool:
    """Whether this machine can serve on `::1` (a container may have no IPv6)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.fixture
def web() -> Iterator[WebServer]:
    server = WebServer()
    yield server
    server.close()


def fetch(url: str) -> dict[str, Any]:
    return call("FetchURL", url=url)


def results(rig: Any) -> list[ev.ToolResult]:
    return [event for event in rig.events if isinstance(event, ev.ToolResult)]


async def run_fetches(
    tmp_path: Path,
    urls: list[str],
    *,
    web: WebConfig | None = None,
    mode: str = "ask",
    answers: list[ev.ApprovalResponse] | None = None,
) -> Any:
    script = [{"tool_calls": [fetch(url)]} for url in urls] + [{"text": "done"}]
    rig = await make_rig(tmp_path, script, tools=[FetchURL(web)])
    rig.state.approval_mode = mode  # type: ignore[assignment]
    rig.answers = list(answers or [])
    await rig.soul.run("read it")
    await rig.settle()
    return rig


async def test_an_html_page_comes_back_as_markdown_without_its_scripts_and_styles(
    tmp_path: Path, web: WebServer
) -> None:
    web.page("/notes", PAGE)
    rig = await run_fetches(tmp_path, [web.url("/notes")])
    (result,) = results(rig)
    assert not result.is_error
    assert result.message == (
        "The returned content is the main text content extracted from the page."
    )
    text = result.output
    assert text.startswith("# Release notes\n")
    assert "# Release 2.0" in text
    assert "The **new** parser is [documented](/docs)." in text
    assert "- faster\n- smaller" in text
    assert "| linux | 1 |" in text
    assert "pip install thing" in text
    for unseen in ("stealCookies", "color: red", "enable js"):
        assert unseen not in text
    # The model reads it in Kimi's form, as any tool's result.
    (tool_message,) = [line for line in rig.lines() if line.get("role") == "tool"]
    assert "# Release 2.0" in json.dumps(tool_message["content"])


async def test_an_https_page_is_fetched_at_the_checked_address_with_its_name_certified(
    tmp_path: Path,
) -> None:
    # The certificate names `localhost` only: the connection goes to the address checked
    # (127.0.0.1), and TLS must still present and verify the name, or the handshake fails.
    certificate = LOCALHOST_CERTIFICATE
    server = WebServer(certificate)
    try:
        server.page("/secure", PAGE)
        trust = ssl.create_default_context(cafile=str(certificate))
        script = [{"tool_calls": [fetch(server.url("/secure", host="localhost"))]}, {"text": "ok"}]
        rig = await make_rig(tmp_path, script, tools=[FetchURL(verify=trust)])
        rig.state.approval_mode = "yolo"
        await rig.soul.run("read it")
        await rig.settle()
    finally:
        server.close()
    (result,) = results(rig)
    assert not result.is_error, result.message
    assert "# Release 2.0" in result.output


async def test_a_text_page_comes_back_whole_and_a_binary_one_is_refused(
    tmp_path: Path, web: WebServer
) -> None:
    web.page("/readme.md", b"# Title\n\n*as is*\n", "text/markdown")
    web.page("/logo.png", b"\x89PNG\r\n\x1a\n" + bytes(64), "image/png")
    rig = await run_fetches(tmp_path, [web.url("/readme.md"), web.url("/logo.png")])
    text_page, image = results(rig)
    assert text_page.output == "# Title\n\n*as is*\n"
    assert text_page.message == "The returned content is the full content of the page."
    assert image.is_error and "not a text page (image/png)" in image.message


async def test_an_http_error_is_reported_as_kimi_does(tmp_path: Path, web: WebServer) -> None:
    rig = await run_fetches(tmp_path, [web.url("/missing")])
    (result,) = results(rig)
    assert result.is_error
    assert result.message.startswith("Failed to fetch URL. Status: 404.")


async def test_a_50_mb_page_is_cut_at_the_cap_with_a_note(tmp_path: Path, web: WebServer) -> None:
    size = 50 * 1024 * 1024
    line = b"x" * 99 + b"\n"

    def huge(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/plain")
        request.send_header("Content-Length", str(size))
        request.end_headers()
        for _ in range(size // len(line)):
            request.wfile.write(line)

    web.routes["/huge.txt"] = huge
    rig = await run_fetches(tmp_path, [web.url("/huge.txt")], web=WebConfig(max_bytes=1_000_000))
    (result,) = results(rig)
    assert not result.is_error
    assert result.message.startswith(
        f"The page is longer than {format_size(1_000_000)}: the returned content is its first"
    )
    assert "Output is truncated to fit in the message." in result.message
    assert 0 < len(result.output) <= 50_000
    assert set(result.output) == {"x", "\n"}


async def test_a_slow_page_stops_at_the_time_cap(tmp_path: Path, web: WebServer) -> None:
    def slow(request: BaseHTTPRequestHandler) -> None:
        request.send_response(200)
        request.send_header("Content-Type", "text/html")
        request.send_header("Content-Length", "100000")
        request.end_headers()
        request.wfile.write(b"<p>first part")
        request.wfile.flush()
        web.release.wait()  # never within the cap: it is set when the test ends

    web.routes["/slow"] = slow
    rig = await run_fetches(tmp_path, [web.url("/slow")], web=WebConfig(timeout=0.3))
    (result,) = results(rig)
    assert result.is_error
    assert result.message == (
        "Failed to fetch URL: request timed out. The server may be slow or unreachable."
    )


@pytest.mark.parametrize("mode", ["ask", "auto-edit", "plan"])
async def test_a_loopback_address_asks_every_time_even_when_allowed_by_config(
    tmp_path: Path, web: WebServer, mode: str
) -> None:
    web.page("/a", PAGE)
    rig = await run_fetches(
        tmp_path,
        [web.url("/a"), web.url("/a")],
        web=WebConfig(allow=["127.0.0.1"]),
        mode=mode,
        answers=["approve_for_session", "reject"],
    )
    first, second = rig.of(ev.ApprovalRequest)
    assert first.action == "fetch a page at a private address"
    assert "127.0.0.1 is a loopback address" in first.description
    assert first.scope_label == ""  # no session approval is offered
    assert second.tool_call_id != first.tool_call_id
    assert rig.state.session_approvals == []
    assert web.paths == ["/a"]  # the rejected second call never reached the server


@pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback (::1) on this machine")
@pytest.mark.parametrize(("mode", "answer"), [("ask", "reject"), ("auto-edit", "approve")])
async def test_the_ipv6_loopback_asks_as_a_private_address_and_yolo_fetches_it(
    tmp_path: Path, mode: str, answer: ev.ApprovalResponse
) -> None:
    web = WebServer(address="::1")
    try:
        web.page("/a", PAGE)
        url = web.url("/a", host="::1")
        rig = await run_fetches(tmp_path, [url], mode=mode, answers=[answer])
        (tmp_path / "yolo").mkdir()
        yolo = await run_fetches(tmp_path / "yolo", [url], mode="yolo")
    finally:
        web.close()
    (asked,) = rig.of(ev.ApprovalRequest)
    assert asked.action == "fetch a page at a private address"
    assert "::1 is a loopback address" in asked.description
    assert asked.scope_label == ""  # every time: no session approval offered
    (result,) = results(rig)
    if answer == "reject":
        assert result.is_error
    else:
        assert "# Release 2.0" in result.output
    assert yolo.of(ev.ApprovalRequest) == []
    (fetched,) = results(yolo)
    assert "# Release 2.0" in fetched.output
    # Only the approved call and yolo's reached the server.
    assert web.paths == (["/a"] if answer == "reject" else ["/a", "/a"])


async def test_yolo_fetches_a_loopback_page_and_its_redirects_without_asking(
    tmp_path: Path, web: WebServer
) -> None:
    web.redirect("/start", web.url("/end", host="localhost"))
    web.page("/end", PAGE)
    rig = await run_fetches(tmp_path, [web.url("/start")], mode="yolo")
    assert rig.of(ev.ApprovalRequest) == []
    (result,) = results(rig)
    assert "# Release 2.0" in result.output
    assert web.paths == ["/start", "/end"]


async def test_a_redirect_to_a_name_at_a_private_address_asks_again(
    tmp_path: Path, web: WebServer
) -> None:
    web.redirect("/start", web.url("/end", host="localhost"))
    web.page("/end", PAGE)
    rig = await run_fetches(tmp_path, [web.url("/start")], answers=["approve", "reject"])
    first, second = rig.of(ev.ApprovalRequest)
    assert "127.0.0.1 is a loopback address" in first.description
    assert "localhost resolves to" in second.description
    assert "a loopback address" in second.description
    assert second.tool_call_id == first.tool_call_id  # the same call, asking for its next hop
    (result,) = results(rig)
    assert result.is_error and "the user did not allow fetching it" in result.message
    assert web.paths == ["/start"]


async def test_a_redirect_to_the_cloud_metadata_address_asks_and_is_never_sent_unapproved(
    tmp_path: Path, web: WebServer
) -> None:
    web.redirect("/start", "http://169.254.169.254/latest/meta-data/")
    rig = await run_fetches(tmp_path, [web.url("/start")], answers=["approve", "reject"])
    _, second = rig.of(ev.ApprovalRequest)
    assert "169.254.169.254 is a link-local address" in second.description
    (result,) = results(rig)
    assert result.is_error and "the user did not allow fetching it" in result.message


async def test_a_redirect_with_no_one_to_ask_stops(tmp_path: Path, web: WebServer) -> None:
    web.redirect("/start", web.url("/end", host="localhost"))
    web.page("/end", PAGE)
    tool = FetchURL()
    env = ToolEnv(work_dir=tmp_path)
    params = FetchParams(url=web.url("/start"))
    assert await tool.permission(params, env) is not None
    with pytest.raises(ToolError, match="did not allow"):
        await tool.run(params, env, "call-1")
    assert web.paths == ["/start"]


async def test_a_public_host_asks_once_per_host_for_the_session_unless_the_config_allows_it(
    tmp_path: Path,
) -> None:
    # Only the approval is computed (a literal public address resolves without the network).
    env = ToolEnv(work_dir=tmp_path)
    params = FetchParams(url="https://93.184.215.14/docs")
    permission = await FetchURL().permission(params, env)
    assert permission is not None
    assert (permission.scope, permission.scope_label) == (
        "web:93.184.215.14",
        "pages from 93.184.215.14",
    )
    assert not permission.asks_every_time
    allowed = FetchURL(WebConfig(allow=["93.184.215.*"]))
    assert await allowed.permission(params, env) is None


async def test_in_the_sandbox_mode_a_public_page_is_fetched_unasked_when_the_sandbox_is_networked(
    tmp_path: Path,
) -> None:
    """FetchURL's approval in the sandbox mode follows a networked Shell command's there: with
    `[sandbox] network = true` neither asks; without it the command cannot reach the network
    (the sandbox stops it, then it asks) and FetchURL asks. A private address asks either way,
    and in the other modes nothing changes."""
    env = ToolEnv(work_dir=tmp_path)
    public = await FetchURL().permission(FetchParams(url="https://93.184.215.14/docs"), env)
    private = await FetchURL().permission(FetchParams(url="http://127.0.0.1:9/"), env)
    curl = await Shell().permission(ShellParams(command="curl -s https://example.com"), env)
    assert public is not None and private is not None and curl is not None

    def allowed(mode: str, network: bool) -> tuple[bool, bool, bool]:
        state = SessionState(approval_mode=mode)  # type: ignore[arg-type]
        approval = Approval(WireBus(), state, sandbox=True, sandbox_network=network)
        return approval.allows(curl), approval.allows(public), approval.allows(private)

    assert allowed("sandbox", network=True) == (True, True, False)
    assert allowed("sandbox", network=False) == (True, False, False)
    assert allowed("auto-edit", network=True) == (False, False, False)
    assert allowed("yolo", network=False) == (True, True, True)


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("192.168.0.1", "a private address"),
        ("100.64.0.1", "a non-public address"),
        ("169.254.169.254", "a link-local address"),
        ("0.0.0.0", "an unspecified address"),
        ("::1", "a loopback address"),
        ("fd00::1", "a private address"),
        ("::ffff:127.0.0.1", "a form of 127.0.0.1, a loopback address"),
        ("64:ff9b::a9fe:a9fe", "a form of 169.254.169.254, a link-local address"),
        ("8.8.8.8", ""),
        ("2606:4700::1111", ""),
    ],
)
def test_addresses_off_the_public_internet_are_told_apart(address: str, kind: str) -> None:
    assert why_private(ipaddress.ip_address(address)) == kind


async def test_a_secret_in_a_page_is_masked(tmp_path: Path, web: WebServer) -> None:
    masking.register("PAGE_TOKEN", "page-secret-value-0001")
    try:
        web.page("/leak", b"<p>token: page-secret-value-0001</p>")
        rig = await run_fetches(tmp_path, [web.url("/leak")])
    finally:
        masking.forget("PAGE_TOKEN")
    (result,) = results(rig)
    assert "page-secret-value-0001" not in result.output
    assert "[masked: PAGE_TOKEN]" in result.output
    assert "page-secret-value-0001" not in rig.context.path.read_text()


def test_search_web_is_offered_only_with_a_provider_and_its_key() -> None:
    def names(web: WebConfig | None, environ: dict[str, str]) -> list[str]:
        return make_toolset(None, web=web, environ=environ).names

    assert "FetchURL" in names(None, {})
    assert "SearchWeb" not in names(None, {"KIMI_API_KEY": "k"})
    assert "SearchWeb" not in names(WebConfig(search="kimi"), {})
    assert "SearchWeb" in names(WebConfig(search="kimi"), {"KIMI_API_KEY": "k"})
    custom = WebConfig(search="kimi", search_key_env="MY_SEARCH_KEY")
    assert "SearchWeb" in names(custom, {"MY_SEARCH_KEY": "k"})
    assert "SearchWeb" not in names(custom, {"KIMI_API_KEY": "k"})


async def test_search_web_calls_kimis_search_service_and_answers_in_kimis_form(
    tmp_path: Path, web: WebServer
) -> None:
    seen: list[tuple[dict[str, str], dict[str, Any]]] = []

    def search(request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers["Content-Length"])
        seen.append((dict(request.headers), json.loads(request.rfile.read(length))))
        body = json.dumps(
            {
                "search_results": [
                    {
                        "site_name": "Python",
                        "title": "What's new",
                        "url": "https://docs.python.org/3/whatsnew/",
                        "snippet": "New features",
                        "date": "2026-01-01",
                    },
                    {"site_name": "PEP", "title": "PEP 1", "url": "https://peps/1", "snippet": "s"},
                ]
            }
        ).encode()
        send_body(request, body, "application/json")

    web.routes["/search"] = search
    settings = WebConfig(search="kimi", search_url=web.url("/search"))
    toolset = make_toolset(None, web=settings, environ={"KIMI_API_KEY": "kimi-key"})
    (tool,) = [t for t in toolset.tools() if t.name == "SearchWeb"]
    script = [{"tool_calls": [call("SearchWeb", query="python news", limit=2)]}, {"text": "ok"}]
    rig = await make_rig(tmp_path, script, tools=[tool])
    await rig.soul.run("search")
    await rig.settle()
    assert rig.of(ev.ApprovalRequest) == []
    headers, body = seen[0]
    assert headers["Authorization"] == "Bearer kimi-key"
    assert body == {
        "text_query": "python news",
        "limit": 2,
        "enable_page_crawling": False,
        "timeout_seconds": 30,
    }
    (result,) = results(rig)
    assert result.output == (
        "Title: What's new\nDate: 2026-01-01\nURL: https://docs.python.org/3/whatsnew/\n"
        "Summary: New features\n\n---\n\nTitle: PEP 1\nDate: \nURL: https://peps/1\nSummary: s\n\n"
    )


async def test_search_web_through_tavily_sends_tavilys_request_and_answers_in_kimis_form(
    tmp_path: Path, web: WebServer
) -> None:
    """`[web] search = "tavily"`: the request Tavily's Search API documents (a bearer key,
    `query`, `max_results`, `include_raw_content`), offered with TAVILY_API_KEY alone; its
    results come back to the model in Kimi's form, the raw page as the content."""
    seen: list[tuple[dict[str, str], dict[str, Any]]] = []
    answer = {
        "query": "python news",
        "results": [
            {
                "title": "What's new",
                "url": "https://docs.python.org/3/whatsnew/",
                "content": "New features",
                "raw_content": "# What's new\n\nEverything.",
                "score": 0.9,
                "published_date": "2026-01-01",
            },
            {"title": "PEP 1", "url": "https://peps/1", "content": "s", "score": 0.5},
        ],
        "response_time": 1.2,
    }

    def search(request: BaseHTTPRequestHandler) -> None:
        length = int(request.headers["Content-Length"])
        seen.append((dict(request.headers), json.loads(request.rfile.read(length))))
        body = json.dumps(answer).encode()
        send_body(request, body, "application/json")

    web.routes["/search"] = search
    settings = WebConfig(search="tavily", search_url=web.url("/search"))
    assert "SearchWeb" not in make_toolset(None, web=settings, environ={"KIMI_API_KEY": "k"}).names
    toolset = make_toolset(None, web=settings, environ={"TAVILY_API_KEY": "tvly-key"})
    (tool,) = [t for t in toolset.tools() if t.name == "SearchWeb"]
    query = call("SearchWeb", query="python news", limit=2, include_content=True)
    rig = await make_rig(tmp_path, [{"tool_calls": [query]}, {"text": "ok"}], tools=[tool])
    await rig.soul.run("search")
    await rig.settle()
    headers, body = seen[0]
    assert headers["Authorization"] == "Bearer tvly-key"
    assert body == {"query": "python news", "max_results": 2, "include_raw_content": True}
    (result,) = results(rig)
    assert result.output == (
        "Title: What's new\nDate: 2026-01-01\nURL: https://docs.python.org/3/whatsnew/\n"
        "Summary: New features\n\n# What's new\n\nEverything.\n\n---\n\n"
        "Title: PEP 1\nDate: \nURL: https://peps/1\nSummary: s\n\n"
    )


def test_the_web_table_is_read_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[web]\nallow = ["docs.python.org"]\nmax_bytes = 1000\nsearch = "kimi"\n')
    config = load_config(path)
    assert config.web.allow == ["docs.python.org"]
    assert (config.web.max_bytes, config.web.search) == (1000, "kimi")
    path.write_text('[web]\nsearch = "altavista"\n')
    with pytest.raises(ConfigError, match="search"):
        load_config(path)


def test_a_changed_web_table_applies_from_the_next_session() -> None:
    changed = Config(web=WebConfig(allow=["docs.python.org"]))
    assert what_changed(Config(), changed) == ["web: from the next session"]
