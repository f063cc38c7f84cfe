"""Web evidence for deployments with internet: a SearxNG-compatible search API, then the pages.

``GET {base_url}/search?q=…&format=json`` answers ``{"results": [{"url", "title", "content"}]}``
(SearxNG's JSON output; other engines can sit behind a small adapter that speaks it). Each
result page is fetched with a timeout and a size limit, only when it is HTML or plain text,
cleaned to its main text by trafilatura (menus, footers and scripts dropped) and cut into
passages like a corpus document, so web and corpus passages are ranked together.

A search or page that fails is reported, never raised past :func:`web_candidates`: one dead
page must not cost an annotator the other four. Every request goes through
:mod:`pipeline.outbound` (the search API as a staff-set service, pages as the open web), so
results or redirects pointing at internal addresses are refused and reported with the reason.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields

import httpx2

from pipeline import outbound
from pipeline.llm import drop_foreign_server_key
from pipeline.retrieval import PASSAGE_SENTENCES, PASSAGE_STRIDE, Candidate, split_passages

logger = logging.getLogger(__name__)

WEB = "web"
TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain")


class WebSearchError(Exception):
    """The search API or a page could not be used; the message says which and why."""


class WebSearchRefused(WebSearchError):
    """A page was not fetched because its address (or a redirect's) is refused by the guard."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"{url} was not fetched: refused, {reason}")
        self.url = url
        self.reason = reason


@dataclass(frozen=True)
class WebSearchConfig:
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # kept out of logs and reprs, as the LLM's
    timeout: float = 10.0
    max_page_bytes: int = 2_000_000
    results_per_query: int = 5
    concurrency: int = 4

    @property
    def is_configured(self) -> bool:
        return bool(self.base_url)

    @classmethod
    def from_env(cls, overrides: Mapping | None = None, environ: Mapping[str, str] | None = None) -> WebSearchConfig:
        """``WEB_SEARCH_URL`` and ``WEB_SEARCH_API_KEY``, then ``overrides`` (a project's settings).

        As with the LLM: the server's key belongs to the server's URL, so overrides that point
        elsewhere without a key of their own get no key.
        """
        env = os.environ if environ is None else environ
        values = {
            "base_url": env.get("WEB_SEARCH_URL") or None,
            "api_key": env.get("WEB_SEARCH_API_KEY") or None,
        }
        overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown web search settings: {sorted(unknown)}")
        drop_foreign_server_key(values, overrides)
        values.update(overrides)
        values["base_url"] = (values.get("base_url") or "").strip().rstrip("/") or None
        for name, convert in (
            ("timeout", float),
            ("max_page_bytes", int),
            ("results_per_query", int),
            ("concurrency", int),
        ):
            if name in values:
                values[name] = convert(values[name])
        return cls(**values)


@dataclass(frozen=True)
class SearchHit:
    url: str
    title: str
    snippet: str
    query: str


def _headers(config: WebSearchConfig) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "factcheck-workbench/1.0"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    return headers


def search(config: WebSearchConfig, query: str) -> list[SearchHit]:
    """The first ``results_per_query`` results for ``query``; raises WebSearchError."""
    if not config.is_configured:
        raise WebSearchError("no web search API is configured")
    try:
        with (
            outbound.guarded_client(outbound.service_policy, timeout=config.timeout) as client,
            outbound.get_following_redirects(
                client,
                f"{config.base_url}/search",
                params={"q": query, "format": "json"},
                headers=_headers(config),
            ) as response,
        ):
            body = bytearray()
            for chunk in response.iter_bytes(64 * 1024):
                body.extend(chunk)
                if len(body) > config.max_page_bytes:
                    raise WebSearchError(f"the search API's answer is larger than {config.max_page_bytes} bytes")
    except outbound.OutboundRefused as exc:
        raise WebSearchError(f"the search API's address is refused: {exc.reason}") from None
    except httpx2.TimeoutException:
        raise WebSearchError(f"the search API did not answer within {config.timeout:g} s") from None
    except httpx2.HTTPError as exc:
        raise WebSearchError(f"the search API could not be reached: {type(exc).__name__}") from None
    if response.status_code >= 400:
        raise WebSearchError(f"the search API answered {response.status_code}")
    try:
        results = json.loads(bytes(body)).get("results")
    except (ValueError, AttributeError):
        raise WebSearchError("the search API did not answer with a JSON object") from None
    if not isinstance(results, list):
        raise WebSearchError("the search API's answer has no results list")
    hits = []
    for result in results:
        if (
            isinstance(result, dict)
            and isinstance(result.get("url"), str)
            and result["url"].startswith(("http://", "https://"))
        ):
            hits.append(
                SearchHit(
                    url=result["url"],
                    title=str(result.get("title") or ""),
                    snippet=str(result.get("content") or ""),
                    query=query,
                )
            )
        if len(hits) == config.results_per_query:
            break
    return hits


def fetch_text(config: WebSearchConfig, url: str) -> str:
    """The main text of the page at ``url``; raises WebSearchError for a timeout, an error
    status, a type that is not text, a page over the size limit, or a page with no text."""
    try:
        with (
            outbound.guarded_client(outbound.pages_policy, timeout=config.timeout) as client,
            outbound.get_following_redirects(
                client, url, headers={"User-Agent": "factcheck-workbench/1.0"}
            ) as response,
        ):
            if response.status_code >= 400:
                raise WebSearchError(f"{url} answered {response.status_code}")
            content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if content_type not in TEXT_TYPES:
                raise WebSearchError(f"{url} is {content_type or 'of no stated type'}, not a web page")
            body = bytearray()
            for chunk in response.iter_bytes(64 * 1024):
                body.extend(chunk)
                if len(body) > config.max_page_bytes:
                    raise WebSearchError(f"{url} is larger than {config.max_page_bytes} bytes")
            encoding = response.charset_encoding or "utf-8"
    except outbound.OutboundRefused as exc:
        raise WebSearchRefused(url, exc.reason) from None
    except httpx2.TimeoutException:
        raise WebSearchError(f"{url} did not answer within {config.timeout:g} s") from None
    except httpx2.HTTPError as exc:
        raise WebSearchError(f"{url} could not be fetched: {type(exc).__name__}") from None
    try:
        "".encode(encoding)
    except LookupError:  # a charset Python does not know
        encoding = "utf-8"
    raw = bytes(body).decode(encoding, errors="replace")
    if content_type == "text/plain":
        text = raw
    else:
        import trafilatura  # trafilatura: heavy, only where web pages are cleaned

        text = trafilatura.extract(raw, include_comments=False, include_tables=True, favor_precision=True) or ""
    if not text.strip():
        raise WebSearchError(f"{url} has no readable text")
    return text


@dataclass
class WebResult:
    candidates: list[Candidate]
    problems: list[str]


def web_candidates(
    config: WebSearchConfig,
    queries: Sequence[str],
    *,
    size: int = PASSAGE_SENTENCES,
    stride: int = PASSAGE_STRIDE,
) -> WebResult:
    """Passages of the pages the search API finds for ``queries``, each page fetched once;
    what failed is listed in ``problems`` for the item's page."""
    problems: list[str] = []
    hits: dict[str, SearchHit] = {}
    for query in queries:
        try:
            for hit in search(config, query):
                hits.setdefault(hit.url, hit)
        except WebSearchError as exc:
            problems.append(f"search {query!r}: {exc}")

    def fetch(hit: SearchHit) -> tuple[SearchHit, str | None, str | None]:
        try:
            return hit, fetch_text(config, hit.url), None
        except WebSearchError as exc:
            return hit, None, str(exc)

    candidates: list[Candidate] = []
    with ThreadPoolExecutor(max_workers=max(1, config.concurrency)) as pool:
        for hit, text, problem in pool.map(fetch, hits.values()):
            if problem:
                problems.append(problem)
                continue
            for passage in split_passages(text, size=size, stride=stride):
                candidates.append(Candidate(text=passage, url=hit.url, title=hit.title, source=WEB, query=hit.query))
    return WebResult(candidates=candidates, problems=problems)
