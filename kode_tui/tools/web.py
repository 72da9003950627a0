"""FetchURL (Kimi 1.52's tool): read a web page as Markdown.

A GET through httpx, with a cap on the bytes read (`[web] max_bytes`) and on the whole call's
time (`[web] timeout`). The model gets an HTML page as Markdown (`kode_tui.tools.web_page`), a
text page as it is, and a note when either was cut.

Reading a page asks like a network Shell call (approve once, or for the host for the session),
unless the mode is yolo or `[web] allow` names the host. A host at a private address asks every
time in every mode but yolo (`kode_tui.tools.web_address`). Redirects are followed here, one hop
at a time, so each hop is resolved and checked like the first: a hop to another host the call's
approval did not cover asks the session's approval again (`ToolEnv.ask`), and the connection
goes to the address that was checked.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING

import msgspec
from pydantic import BaseModel, Field, PrivateAttr

from kode_tui.config import WebConfig
from kode_tui.humanize import format_size
from kode_tui.tools.base import Permission, Tool, ToolEnv, ToolError, ToolOutput, truncate
from kode_tui.tools.web_address import AddressError, Resolved, host_allowed, parse_url, resolve

if TYPE_CHECKING:
    import httpx

MAX_REDIRECTS = 10
USER_AGENT = (
    # Kimi's: some sites answer an unknown agent with a page saying to use a browser.
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
    "(KHTML, like Gecko) Chrome/91.0.4472.124 Safari/537.36"
)
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml")
_TRUNCATED = "Output is truncated to fit in the message."


class FetchParams(BaseModel):
    url: str = Field(description="The URL to fetch content from.")

    _checked: Resolved | None = PrivateAttr(default=None)
    """What `permission()` resolved the host to: what the call's approval covered."""


class _Page(msgspec.Struct):
    url: httpx.URL
    status: int
    content_type: str
    charset: str | None
    body: bytes
    cut: bool


class FetchURL(Tool[FetchParams]):
    """Kimi's FetchURL, fetched here (Kimi's own fetch service is not used)."""

    name = "FetchURL"
    description = "Fetch a web page from a URL and extract main text content from it."
    params = FetchParams

    def __init__(
        self, settings: WebConfig | None = None, *, verify: ssl.SSLContext | None = None
    ) -> None:
        """`verify`: whom https pages must be certified by (default: httpx's, certifi's CAs)."""
        self._settings = settings or WebConfig()
        self._verify: ssl.SSLContext | bool = verify if verify is not None else True

    async def permission(self, params: FetchParams, env: ToolEnv) -> Permission | None:
        try:
            url = parse_url(params.url)
            resolved = await resolve(url)
        except AddressError as error:
            raise ToolError(_network_error(str(error)), brief="Network error") from None
        params._checked = resolved
        return self._permission_of(url, resolved)

    def _permission_of(self, url: httpx.URL, resolved: Resolved) -> Permission | None:
        """What reading `url` needs allowed: nothing for a public host `[web] allow` names."""
        shown = str(url)
        if resolved.private:
            return Permission(
                kind="read",
                action="fetch a page at a private address",
                description=f"{shown} ({resolved.private})",
                scope=f"web-private:{resolved.host}",
                scope_label="",
                private_address=resolved.private,
            )
        if host_allowed(resolved.host, self._settings.allow):
            return None
        return Permission(
            # A read: it changes nothing here, so plan mode asks rather than refuses it.
            kind="read",
            action="fetch URL",
            description=shown,
            scope=f"web:{resolved.host}",
            scope_label=f"pages from {resolved.host}",
            network=True,
        )

    async def run(self, params: FetchParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        import httpx  # at the first fetch: an agent that never fetches never loads it

        try:
            url = parse_url(params.url)
        except AddressError as error:
            raise ToolError(_network_error(str(error)), brief="Network error") from None
        try:
            async with asyncio.timeout(self._settings.timeout) as deadline:
                page = await self._fetch(url, params._checked, env, deadline)
        except TimeoutError:
            raise ToolError(
                "Failed to fetch URL: request timed out. The server may be slow or unreachable.",
                brief="Request timed out",
            ) from None
        except (httpx.HTTPError, AddressError, OSError) as error:
            why = str(error) or type(error).__name__
            raise ToolError(_network_error(why), brief="Network error") from None
        return await self._result(page)

    async def _fetch(
        self, url: httpx.URL, checked: Resolved | None, env: ToolEnv, deadline: asyncio.Timeout
    ) -> _Page:
        """The page at `url`, redirects followed hop by hop, each checked before it is sent."""
        # The hosts this call may reach, and whether at a private address too.
        import httpx

        granted: dict[str, bool] = {}
        if checked is not None:
            granted[checked.host] = bool(checked.private)
        async with httpx.AsyncClient(
            # A proxy from the environment would resolve names itself, past the checks.
            trust_env=False,
            follow_redirects=False,
            timeout=None,  # the call's own cap (`asyncio.timeout`) covers every hop
            headers={"User-Agent": USER_AGENT},
            verify=self._verify,
        ) as client:
            for _ in range(MAX_REDIRECTS + 1):
                resolved = await resolve(url)
                asked = asyncio.get_running_loop().time()
                await self._allow_hop(url, resolved, granted, env)
                # The time cap is the page's: the user's time to answer does not count.
                waited = asyncio.get_running_loop().time() - asked
                if (when := deadline.when()) is not None:
                    deadline.reschedule(when + waited)
                page, location = await _get(client, url, resolved, self._settings.max_bytes)
                if location is None:
                    return page
                url = location
        raise ToolError(
            f"Failed to fetch URL: more than {MAX_REDIRECTS} redirects.", brief="Too many redirects"
        )

    async def _allow_hop(
        self, url: httpx.URL, resolved: Resolved, granted: dict[str, bool], env: ToolEnv
    ) -> None:
        """Go on to `url` only if the call's approval covers it or the user allows it now."""
        private = bool(resolved.private)
        if resolved.host in granted and (granted[resolved.host] or not private):
            return
        permission = self._permission_of(url, resolved)
        if permission is not None and (env.ask is None or not await env.ask(permission)):
            why = f" ({resolved.private})" if private else ""
            raise ToolError(
                f"Stopped before {url}{why}: the user did not allow fetching it. "
                "Do not try to reach it another way.",
                brief="Redirect not allowed",
            )
        granted[resolved.host] = granted.get(resolved.host, False) or private

    async def _result(self, page: _Page) -> ToolOutput:
        if page.status >= 400:
            raise ToolError(
                f"Failed to fetch URL. Status: {page.status}. "
                "This may indicate the page is not accessible or the server is down.",
                brief=f"HTTP {page.status} error",
            )
        if not page.body:
            return ToolOutput(message="The response body is empty.", brief="Empty response body")
        kind = page.content_type
        if kind.startswith(("text/plain", "text/markdown")):
            text = page.body.decode(page.charset or "utf-8", errors="replace")
            message = "The returned content is the full content of the page."
        elif kind.startswith(("text/html", "application/xhtml+xml")) or not kind:
            from kode_tui.tools.web_page import page_markdown  # bs4 and markdownify: when used

            text = await asyncio.to_thread(page_markdown, page.body, page.charset)
            message = "The returned content is the main text content extracted from the page."
        elif kind.startswith(_TEXT_TYPES):
            text = page.body.decode(page.charset or "utf-8", errors="replace")
            message = "The returned content is the full content of the page."
        else:
            raise ToolError(
                f"Failed to fetch URL: it is not a text page ({kind}).",
                brief=f"Not text: {kind}",
            )
        if not text.strip():
            raise ToolError(
                "Failed to extract meaningful content from the page. "
                "This may indicate the page content is not suitable for text extraction, "
                "or the page requires JavaScript to render its content.",
                brief="No content extracted",
            )
        notes = [message]
        if page.cut:
            cap = format_size(self._settings.max_bytes)
            notes = [f"The page is longer than {cap}: the returned content is its first {cap}."]
        text, truncated = truncate(text)
        if truncated:
            notes.append(_TRUNCATED)
        brief = format_size(len(page.body)) + (" (cut)" if page.cut or truncated else "")
        return ToolOutput(output=text, message=" ".join(notes), brief=brief)


async def _get(
    client: httpx.AsyncClient, url: httpx.URL, resolved: Resolved, cap: int
) -> tuple[_Page, httpx.URL | None]:
    """One GET of `url` at the checked address; the page, or where it redirects to."""
    address = str(resolved.address)
    extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
    request = client.build_request(
        "GET",
        url.copy_with(host=address),
        headers={"Host": url.netloc.decode("ascii")},
        extensions=extensions,
    )
    response = await client.send(request, stream=True)
    try:
        location = response.headers.get("location")
        if response.status_code in _REDIRECTS and location:
            try:
                return _Page(url, response.status_code, "", None, b"", False), parse_url(
                    str(url.join(location))
                )
            except AddressError as error:
                raise ToolError(
                    f"Failed to fetch URL: it redirects to {location}, which cannot be fetched "
                    f"({error})",
                    brief="Bad redirect",
                ) from None
        # An error page is not read: the model is told the status alone (as Kimi does).
        body, cut = (b"", False) if response.status_code >= 400 else await _read(response, cap)
        kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
        return _Page(url, response.status_code, kind, response.charset_encoding, body, cut), None
    finally:
        await response.aclose()


async def _read(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """At most `cap` bytes of the (decompressed) body; whether there was more."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        if size + len(chunk) > cap:
            chunks.append(chunk[: cap - size])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


def _network_error(error: str) -> str:
    return (
        f"Failed to fetch URL due to network error: {error}. "
        "This may indicate the URL is invalid or the server is unreachable."
    )
