"""SearchWeb (Kimi 1.52's tool): search the web through the service `[web] search` names.

Offered only when a provider is configured and its API key is in the environment
(`search_tool`); otherwise the model is not told of it at all. The provider is the user's choice,
not the model's, so its endpoint is not checked as FetchURL's pages are.

Providers: `kimi`, Kimi Code's search service (what Kimi CLI uses after `/login`), with Kimi's
request and result form.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx
from pydantic import BaseModel, Field, ValidationError

from kode_tui.config import SEARCH_KEY_ENV, SEARCH_URL, WebConfig
from kode_tui.tools.base import Tool, ToolEnv, ToolError, ToolOutput, truncate

USER_AGENT = "kode-tui"
_TIMEOUT = httpx.Timeout(180, read=90, connect=15)
"""Kimi's: the service's own limit is 30 s, but crawling the pages can take longer."""


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


class SearchWeb(Tool[SearchParams]):
    """Kimi's SearchWeb, through the Kimi Code search service."""

    name = "SearchWeb"
    description = (
        "WebSearch tool allows you to search on the internet to get latest information, "
        "including news, documents, release notes, blog posts, papers, etc."
    )
    params = SearchParams

    def __init__(self, url: str, key: str) -> None:
        self._url = url
        self._key = key

    async def run(self, params: SearchParams, env: ToolEnv, tool_call_id: str) -> ToolOutput:
        headers = {
            "User-Agent": USER_AGENT,
            "Authorization": f"Bearer {self._key}",
            "X-Msh-Tool-Call-Id": tool_call_id,
        }
        body = {
            "text_query": params.query,
            "limit": params.limit,
            "enable_page_crawling": params.include_content,
            "timeout_seconds": 30,
        }
        try:
            async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
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
            results = _Answer.model_validate_json(response.content).search_results
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
    return SearchWeb(settings.search_url or SEARCH_URL[settings.search], key)
