"""SearchWeb (Kimi 1.52's tool): search the web through the service `[web] search` names.

Offered only when a provider is configured and its API key is in the environment
(`search_tool`); otherwise the model is not told of it at all. The provider is the user's choice,
not the model's, so its endpoint is not checked as FetchURL's pages are.

Providers (`_request` and `_results` hold each one's form; the model sees the same tool and
result text whichever answers):
- `kimi`: Kimi Code's search service (what Kimi CLI uses after `/login`), with Kimi's request
  and result form;
- `tavily`: Tavily's Search API (`POST /search`, a bearer key, `query` and `max_results`; its
  `content` is the snippet, `raw_content` the page when `include_content` asks for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from kode_tui.config import SEARCH_KEY_ENV, SEARCH_URL, SearchProvider, WebConfig
from kode_tui.tools.base import Tool, ToolEnv, ToolError, ToolOutput, truncate

USER_AGENT = "kode-tui"


class SearchParams(BaseModel):
    query: str = Field(description="The query text to search for.")
    limit: int = Field(
        description=(
            "The number of results to return. "
            "Typically you do not need to set this value. "
            "When the results do not contain what you need, "
            "you probably want to give a more concrete query."
        ),
        default=5,
        ge=1,
        le=20,
    )
    include_content: bool = Field(
        description=(
            "Whether to include the content of the web pages in the results. "
            "It can consume a large amount of tokens when this is set to True. "
            "You should avoid enabling this when `limit` is set to a large value."
        ),
        default=False,
    )


class SearchResult(BaseModel):
    """One result in the Kimi search service's answer."""

    site_name: str = ""
    title: str
    url: str
    snippet: str
    content: str = ""
    date: str = ""


class _Answer(BaseModel):
    search_results: list[SearchResult]


class _TavilyResult(BaseModel):
    title: str
    url: str
    content: str = ""
    raw_content: str | None = None
    published_date: str | None = None


class _TavilyAnswer(BaseModel):
    results: list[_TavilyResult]


def _request(
    provider: SearchProvider, params: SearchParams, key: str, tool_call_id: str
) -> tuple[dict[str, str], dict[str, Any]]:
    """The headers and JSON body of `provider`'s search request."""
    headers = {"User-Agent": USER_AGENT, "Authorization": f"Bearer {key}"}
    if provider == "tavily":
        body: dict[str, Any] = {
            "query": params.query,
            "max_results": params.limit,
            "include_raw_content": params.include_content,
        }
        return headers, body
    headers["X-Msh-Tool-Call-Id"] = tool_call_id
    body = {
        "text_query": params.query,
        "limit": params.limit,
        "enable_page_crawling": params.include_content,
        "timeout_seconds": 30,
    }
    return headers, body


def _results(provider: SearchProvider, content: bytes) -> list[SearchResult]:
    """`provider`'s answer as Kimi's results; ValidationError when it is not one."""
    if provider == "tavily":
        return [
            SearchResult(
                title=r.title,
                url=r.url,
                snippet=r.content,
                content=r.raw_content or "",
                date=r.published_date or "",
            )
            for r in _TavilyAnswer.model_validate_json(content).results
        ]
    return _Answer.model_validate_json(content).search_results


class SearchWeb(Tool[SearchParams]):
    """Kimi's SearchWeb, through the search service the user configured."""

    name = "SearchWeb"
    description = (
        "WebSearch tool allows you to search on the internet to get latest information, "
        "including news, documents, release notes, blog posts, papers, etc."
    )
    params = SearchParams

    def __init__(self, url: str, key: str, provider: SearchProvider = "kimi") -> None:
        self._url = url
        self._key = key
        self._provider: SearchProvider = provider

    async def run(self, params: SearchParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        import httpx  # at the first search, not with the tool set

        headers, body = _request(self._provider, params, self._key, tool_call_id)
        try:
            # Kimi's timeouts: the service's own limit is 30 s, but crawling pages takes longer.
            timeout = httpx.Timeout(180, read=90, connect=15)
            async with httpx.AsyncClient(timeout=timeout) as client:
                response = await client.post(self._url, headers=headers, json=body)
        except httpx.TimeoutException:
            raise ToolError(
                "Search request timed out. The search service may be slow or unavailable.",
                brief="Search request timed out",
            ) from None
        except httpx.HTTPError as error:
            raise ToolError(
                f"Search request failed: {error}. The search service may be unavailable.",
                brief="Search request failed",
            ) from None
        if response.status_code != 200:
            raise ToolError(
                f"Failed to search. Status: {response.status_code}. "
                "This may indicate that the search service is currently unavailable.",
                brief="Failed to search",
            )
        try:
            results = _results(self._provider, response.content)
        except ValidationError as error:
            raise ToolError(
                f"Failed to parse search results. Error: {error}. "
                "This may indicate that the search service is currently unavailable.",
                brief="Failed to parse search results",
            ) from None
        parts = [
            f"Title: {r.title}\nDate: {r.date}\nURL: {r.url}\nSummary: {r.snippet}\n\n"
            + (f"{r.content}\n\n" if r.content else "")
            for r in results
        ]
        text, truncated = truncate("---\n\n".join(parts))
        return ToolOutput(
            output=text,
            message="Output is truncated to fit in the message." if truncated else "",
            brief=f"{len(results)} results",
        )


def search_tool(settings: WebConfig, environ: Mapping[str, str]) -> SearchWeb | None:
    """SearchWeb when `[web] search` names a provider whose API key is in `environ`."""
    if settings.search is None:
        return None
    key = environ.get(settings.search_key_env or SEARCH_KEY_ENV[settings.search], "")
    if not key:
        return None
    return SearchWeb(settings.search_url or SEARCH_URL[settings.search], key, settings.search)
