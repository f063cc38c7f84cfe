"""The web-search backend against a loopback server that plays both the search API and the web.

The search API is the server's loopback address (allowed as a lab's private service); pages are
at ``public.test``, which the guard's resolver (pointed at a test table) resolves to a public
address that is then dialled on the loopback server, so the test never leaves loopback."""

from dataclasses import replace

import pytest

from pipeline import outbound
from pipeline.websearch import (
    WEB,
    WebSearchConfig,
    WebSearchError,
    WebSearchRefused,
    fetch_text,
    search,
    web_candidates,
)
from tests.helpers.websearch import (
    ADDRESSES,
    PAGES,
    PUBLIC_IP,
    SECRET,
    SSRF_REASONS,
    Web,
    web_server,
)


@pytest.fixture
def web(monkeypatch):
    with web_server(monkeypatch) as config:
        yield config


def test_search_reads_searxng_json_with_the_key_and_keeps_only_web_links(web):
    hits = search(web, "Marie Curie Nobel")
    assert [hit.title for hit in hits] == [
        "Curie",
        "Curie",
        "Pdf",
        "Missing",
        "Slowpage",
        "Huge",
        "Javascript-Only",
    ]
    assert all(hit.query == "Marie Curie Nobel" for hit in hits)
    assert Web.seen[0] == ("/search", "Bearer search-key")


@pytest.mark.parametrize(
    "query, message",
    [
        ("slow", "did not answer within 0.5 s"),
        ("broken", "answered 503"),
        ("not json", "did not answer with a JSON object"),
        ("huge answer", "answer is larger than 100000 bytes"),
    ],
)
def test_search_failures_say_what_went_wrong(web, query, message):
    with pytest.raises(WebSearchError, match=message):
        search(web, query)


def test_unconfigured_and_unreachable_search_are_errors_not_crashes():
    with pytest.raises(WebSearchError, match="no web search API"):
        search(WebSearchConfig(), "q")
    with pytest.raises(WebSearchError, match="could not be reached"):
        search(WebSearchConfig(base_url="http://127.0.0.1:9", timeout=0.5), "q")


def test_a_page_is_cleaned_to_its_main_text(web):
    text = fetch_text(web, f"{PAGES}/curie")
    assert "first woman to win a Nobel Prize" in text and "Warsaw in 1867" in text
    assert "tracking" not in text and "All rights reserved" not in text and "About us" not in text


@pytest.mark.parametrize(
    "path, message",
    [
        ("pdf", "is application/pdf, not a web page"),
        ("missing", "answered 404"),
        ("slowpage", "did not answer within 0.5 s"),
        ("huge", "larger than 100000 bytes"),
        ("javascript-only", "has no readable text"),
    ],
)
def test_pages_that_cannot_be_used_are_refused_with_the_reason(web, path, message):
    with pytest.raises(WebSearchError, match=message):
        fetch_text(web, f"{PAGES}/{path}")


def test_web_candidates_are_passages_of_each_page_once_with_problems_listed(web):
    result = web_candidates(web, ["Marie Curie Nobel", "broken"], size=2, stride=2)
    assert result.candidates and all(c.source == WEB and c.url.endswith("/curie") for c in result.candidates)
    assert all(c.title == "Curie" and c.query == "Marie Curie Nobel" for c in result.candidates)
    assert len({c.text for c in result.candidates}) == len(result.candidates)  # the page was fetched once
    assert any("Nobel Prize in Chemistry" in c.text for c in result.candidates)
    assert len(result.problems) == 6  # the failed search and five unusable pages
    assert any("search 'broken'" in p for p in result.problems)
    assert [path for path, _ in Web.seen].count("/curie") == 1
    assert all(auth is None for path, auth in Web.seen if path != "/search")  # the key goes to the API only


def test_results_and_redirects_pointing_inside_are_refused_with_the_reason_and_a_public_page_is_fetched(
    web,
):
    config = replace(web, results_per_query=100)
    result = web_candidates(config, ["ssrf"], size=2, stride=2)
    # The good page (reached through a redirect) is still fetched, with its name as Host header.
    assert result.candidates and {c.url for c in result.candidates} == {f"{PAGES}/redirect/public"}
    assert any("Nobel Prize in Chemistry" in c.text for c in result.candidates)
    assert "public.test" in Web.hosts
    # Nothing internal was read or shown, and nothing but the public address was dialled for pages.
    assert all(SECRET not in c.text for c in result.candidates)
    assert "/secret" not in [path for path, _ in Web.seen] and "/latest/meta-data/" not in [p for p, _ in Web.seen]
    assert {d for d in Web.dialled if d[0] != "127.0.0.1"} == {(PUBLIC_IP, 80)}
    assert len(result.problems) == len(SSRF_REASONS), result.problems
    for (url, reason), problem in zip(SSRF_REASONS, result.problems):
        assert "was not fetched: refused, " in problem and problem.endswith(reason), (url, problem)


@pytest.mark.parametrize("url, reason", [(u, r) for u, r in SSRF_REASONS if not u.startswith("/")])
def test_each_internal_address_is_refused_before_connecting(web, url, reason):
    with pytest.raises(WebSearchRefused) as refused:
        fetch_text(web, url)
    assert refused.value.reason.endswith(reason)
    assert Web.dialled == []


def test_a_lab_allows_its_intranet_range_and_ports_by_setting(web, monkeypatch):
    monkeypatch.setenv("OUTBOUND_ALLOWED_NETWORKS", "10.0.0.0/24")
    monkeypatch.setenv("OUTBOUND_ALLOWED_PORTS", "8080")
    ADDRESSES["intranet.test"] = ["10.0.0.7"]
    port = Web.dialled  # the list the dial records into
    monkeypatch.setattr(outbound, "dial_address", lambda ip, p: port.append((ip, p)) or ("127.0.0.1", web_port(web)))
    try:
        assert "Warsaw in 1867" in fetch_text(web, "http://intranet.test:8080/curie")
        assert Web.dialled == [("10.0.0.7", 8080)]
        with pytest.raises(WebSearchRefused, match="10.0.1.7 is a private address"):
            fetch_text(web, "http://10.0.1.7/curie")  # outside the allowed range
        with pytest.raises(WebSearchRefused, match="127.0.0.1 is a loopback address"):
            fetch_text(web, "http://127.0.0.1/curie")
    finally:
        del ADDRESSES["intranet.test"]


def web_port(config: WebSearchConfig) -> int:
    return int(config.base_url.rstrip("/").rsplit(":", 1)[1])


def test_the_search_api_on_a_private_address_needs_the_explicit_setting(web, monkeypatch):
    monkeypatch.delenv("OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS")
    with pytest.raises(WebSearchError, match="the search API's address is refused: 127.0.0.1 is a loopback address"):
        search(web, "Marie Curie")
    assert Web.seen == []
    monkeypatch.setenv("OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS", "1")
    assert search(web, "Marie Curie")


def test_the_config_repr_hides_the_api_key():
    config = WebSearchConfig(base_url="http://search.example", api_key="ws-secret-key")
    assert "ws-secret-key" not in repr(config) and "ws-secret-key" not in str(config)
    assert "http://search.example" in repr(config)
