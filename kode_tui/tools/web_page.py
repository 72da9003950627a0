"""An HTML page as Markdown for the model: what FetchURL returns for a web page.

markdownify (on BeautifulSoup with the standard library's parser) turns the page into Markdown:
headings, lists, links, tables and code blocks stay readable and cost few tokens. Scripts, styles
and other things no reader sees are dropped first.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup
from markdownify import ATX, MarkdownConverter

_UNSEEN = (
    "script",
    "style",
    "noscript",
    "template",
    "svg",
    "canvas",
    "iframe",
    "object",
    "embed",
    "head",
    "button",
    "input",
    "select",
    "textarea",
)
"""Elements whose text no reader of the page sees (code, styles, inline images, controls)."""

_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")


def page_markdown(html: bytes, charset: str | None = None) -> str:
    """The page `html` (in `charset`, or as its own `<meta charset>` says) as Markdown, its
    `<title>` as the first heading."""
    soup = BeautifulSoup(html, "html.parser", from_encoding=charset)
    title = soup.title.get_text(" ", strip=True) if soup.title is not None else ""
    for element in soup(_UNSEEN):
        element.decompose()
    body = MarkdownConverter(heading_style=ATX, bullets="-").convert_soup(soup)
    text = _BLANK_RUNS.sub("\n\n", body).strip()
    if title and not text.startswith(f"# {title}"):
        text = f"# {title}\n\n{text}"
    return text + "\n" if text else ""
