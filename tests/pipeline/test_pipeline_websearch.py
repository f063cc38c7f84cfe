"""The web-search backend against a loopback server that plays both the search API and the web."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from pipeline.websearch import WEB, WebSearchConfig, WebSearchError, fetch_text, search, web_candidates

ARTICLE = """<html><head><title>Marie Curie</title><script>var tracking = 1;</script></head><body>
<nav><a href="/">Home</a> | <a href="/about">About us</a></nav>
<article><h1>Marie Curie</h1>
<p>Marie Curie was a Polish and naturalised-French physicist and chemist who conducted pioneering research
on radioactivity. She was the first woman to win a Nobel Prize, the first person to win a Nobel Prize twice,
and the only person to win a Nobel Prize in two scientific fields.</p>
<p>She was born in Warsaw in 1867. She moved to Paris in 1891 to study at the University of Paris.
In 1903 she shared the Nobel Prize in Physics with Pierre Curie and Henri Becquerel.
In 1911 she won the Nobel Prize in Chemistry for the discovery of polonium and radium.</p>
</article><footer>Copyright 2024 Example Encyclopedia. All rights reserved.</footer></body></html>"""


class Web(BaseHTTPRequestHandler):
    seen: list = []

    def log_message(self, *args):
        pass

    def reply(self, status: int, body: bytes, content_type: str):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout), as tested
            pass

    def do_GET(self):
        parts = urlsplit(self.path)
        Web.seen.append((parts.path, self.headers.get("Authorization")))
        base = f"http://127.0.0.1:{self.server.server_port}"
        if parts.path == "/search":
            query = parse_qs(parts.query)["q"][0]
            if query == "slow":
                time.sleep(1.5)
            if query == "broken":
                return self.reply(503, b"busy", "text/plain")
            if query == "not json":
                return self.reply(200, b"<html>search page</html>", "text/html")
            results = [{"url": f"{base}/{name}", "title": name.title(), "content": "snippet"}
                       for name in ("curie", "curie", "pdf", "missing", "slowpage", "huge", "javascript-only")]
            results.append({"url": "ftp://example.org/file", "title": "not http"})
            return self.reply(200, json.dumps({"results": results}).encode(), "application/json")
        if parts.path == "/curie":
            return self.reply(200, ARTICLE.encode(), "text/html; charset=utf-8")
        if parts.path == "/pdf":
            return self.reply(200, b"%PDF-1.4 ...", "application/pdf")
        if parts.path == "/slowpage":
            time.sleep(1.5)
            return self.reply(200, ARTICLE.encode(), "text/html")
        if parts.path == "/huge":
            return self.reply(200, b"<html><body><p>" + b"word " * 100_000 + b"</p></body></html>", "text/html")
        if parts.path == "/javascript-only":
            return self.reply(200, b"<html><body><script>render()</script></body></html>", "text/html")
        return self.reply(404, b"not found", "text/plain")


@pytest.fixture
def web():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Web)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Web.seen = []
    yield WebSearchConfig(base_url=f"http://127.0.0.1:{server.server_port}/", api_key="search-key", timeout=0.5,
                          max_page_bytes=100_000, results_per_query=10)
    server.shutdown()
    server.server_close()


def test_search_reads_searxng_json_with_the_key_and_keeps_only_web_links(web):
    hits = search(web, "Marie Curie Nobel")
    assert [hit.title for hit in hits] == ["Curie", "Curie", "Pdf", "Missing", "Slowpage", "Huge", "Javascript-Only"]
    assert all(hit.query == "Marie Curie Nobel" for hit in hits)
    assert Web.seen[0] == ("/search", "Bearer search-key")


@pytest.mark.parametrize("query, message", [
    ("slow", "did not answer within 0.5 s"),
    ("broken", "answered 503"),
    ("not json", "did not answer with a JSON object"),
])
def test_search_failures_say_what_went_wrong(web, query, message):
    with pytest.raises(WebSearchError, match=message):
        search(web, query)


def test_unconfigured_and_unreachable_search_are_errors_not_crashes():
    with pytest.raises(WebSearchError, match="no web search API"):
        search(WebSearchConfig(), "q")
    with pytest.raises(WebSearchError, match="could not be reached"):
        search(WebSearchConfig(base_url="http://127.0.0.1:9", timeout=0.5), "q")


def test_a_page_is_cleaned_to_its_main_text(web):
    text = fetch_text(web, f"{web.base_url}/curie")
    assert "first woman to win a Nobel Prize" in text and "Warsaw in 1867" in text
    assert "tracking" not in text and "All rights reserved" not in text and "About us" not in text


@pytest.mark.parametrize("path, message", [
    ("pdf", "is application/pdf, not a web page"),
    ("missing", "answered 404"),
    ("slowpage", "did not answer within 0.5 s"),
    ("huge", "larger than 100000 bytes"),
    ("javascript-only", "has no readable text"),
])
def test_pages_that_cannot_be_used_are_refused_with_the_reason(web, path, message):
    with pytest.raises(WebSearchError, match=message):
        fetch_text(web, f"{web.base_url}/{path}")


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
