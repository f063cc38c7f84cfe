"""The web-search backend against a loopback server that plays both the search API and the web.

The search API is the server's loopback address (allowed as a lab's private service); pages are
at ``public.test``, which the guard's resolver (pointed at a test table) resolves to a public
address that is then dialled on the loopback server, so the test never leaves loopback."""
import json
import threading
from dataclasses import replace
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from pipeline import outbound
from pipeline.websearch import WEB, WebSearchConfig, WebSearchError, WebSearchRefused, fetch_text, search, web_candidates

PUBLIC_IP = "93.184.216.34"
PAGES = "http://public.test"
# Names of the test's own DNS table; any other name does not resolve (no real DNS lookup).
ADDRESSES = {"public.test": [PUBLIC_IP], "localhost": ["127.0.0.1", "::1"], "loopback.test": ["127.0.0.1"],
             "mixed.test": [PUBLIC_IP, "10.0.0.7"], "metadata.test": ["169.254.169.254"]}
SECRET = "internal service text that must never be shown"

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
    hosts: list = []
    dialled: list = []

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
        Web.hosts.append(self.headers.get("Host"))
        base = PAGES
        own = f"http://127.0.0.1:{self.server.server_port}"
        if parts.path == "/secret":
            return self.reply(200, f"<html><body><article><p>{SECRET}.</p></article></body></html>".encode(), "text/html")
        if parts.path.startswith("/redirect/"):
            targets = {"loopback": f"{own}/secret", "loopback-default-port": "http://127.0.0.1/secret",
                       "decimal": "http://2130706433/secret", "name": "http://loopback.test/secret",
                       "metadata": "http://169.254.169.254/latest/meta-data/", "relative": "/curie",
                       "public": f"{PAGES}/curie", "again": f"{PAGES}/redirect/again", "gopher": "gopher://public.test/"}
            self.send_response(302)
            self.send_header("Location", targets[parts.path.removeprefix("/redirect/")])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if parts.path == "/search":
            query = parse_qs(parts.query)["q"][0]
            if query == "ssrf":
                results = [{"url": u, "title": u, "content": ""} for u in ssrf_urls(own)]
                return self.reply(200, json.dumps({"results": results}).encode(), "application/json")
            if query == "slow":
                time.sleep(1.5)
            if query == "huge answer":
                return self.reply(200, json.dumps({"results": [], "pad": "x" * 200_000}).encode(), "application/json")
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


def ssrf_urls(own: str) -> list[str]:
    """What a hostile search API (or the web behind it) could point at, then one good page."""
    return [f"{own}/secret", "http://127.0.0.1/secret", "http://localhost/secret", f"{PAGES}/redirect/loopback",
            f"{PAGES}/redirect/loopback-default-port", f"{PAGES}/redirect/decimal", f"{PAGES}/redirect/name",
            f"{PAGES}/redirect/metadata", f"{PAGES}/redirect/again", f"{PAGES}/redirect/gopher",
            "http://0.0.0.0/secret", "http://[::1]/secret", "http://[::ffff:127.0.0.1]/secret",
            "http://2130706433/secret", "http://0x7f.1/secret", "http://017700000001/secret", "http://loopback.test/secret",
            "http://169.254.169.254/latest/meta-data/", "http://metadata.test/", "http://10.0.0.7/", "http://192.168.1.1/",
            "http://[fd00::1]/", "http://[fe80::1]/", "http://mixed.test/", "http://nowhere.test/", f"{PAGES}:6379/",
            f"{PAGES}/redirect/public"]


def test_network(monkeypatch, port: int) -> None:
    """The guard resolves names from ADDRESSES and dials the public address on the loopback server."""
    def resolve(host, _port):
        if host not in ADDRESSES:
            raise OSError(f"{host} does not resolve")
        return ADDRESSES[host]

    def dial(ip, dial_port):
        Web.dialled.append((ip, dial_port))
        if (ip, dial_port) == (PUBLIC_IP, 80):
            return "127.0.0.1", port
        assert (ip, dial_port) == ("127.0.0.1", port), f"the guard let {ip}:{dial_port} through"  # the search API
        return ip, dial_port

    monkeypatch.setattr(outbound, "resolve_host", resolve)
    monkeypatch.setattr(outbound, "dial_address", dial)


test_network.__test__ = False  # a helper, not a test


@pytest.fixture
def web(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Web)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Web.seen, Web.hosts, Web.dialled = [], [], []
    test_network(monkeypatch, server.server_port)
    monkeypatch.setenv("OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS", "1")  # the search API is this loopback server
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
    ("huge answer", "answer is larger than 100000 bytes"),
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
    text = fetch_text(web, f"{PAGES}/curie")
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


# (URL, what the refusal says): every one is refused before any connection is made.
SSRF_REASONS = [
    ("/secret", "127.0.0.1 is a loopback address"),
    ("http://127.0.0.1/secret", "127.0.0.1 is a loopback address"),
    ("http://localhost/secret", "localhost resolves to 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("/redirect/loopback", "127.0.0.1 is a loopback address"),
    ("/redirect/loopback-default-port", "127.0.0.1 is a loopback address"),
    ("/redirect/decimal", "2130706433 is 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("/redirect/name", "loopback.test resolves to 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("/redirect/metadata", "169.254.169.254 is a link-local address"),
    ("/redirect/again", "more than 5 redirects"),
    ("/redirect/gopher", "only http and https are fetched, not gopher"),
    ("http://0.0.0.0/secret", "0.0.0.0 is the unspecified address"),
    ("http://[::1]/secret", "::1 is a loopback address"),
    ("http://[::ffff:127.0.0.1]/secret", "127.0.0.1 is a loopback address (written as IPv4-mapped IPv6 ::ffff:7f00:1)"),
    ("http://2130706433/secret", "2130706433 is 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("http://0x7f.1/secret", "0x7f.1 is 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("http://017700000001/secret", "017700000001 is 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("http://loopback.test/secret", "loopback.test resolves to 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    ("http://metadata.test/", "metadata.test resolves to 169.254.169.254: 169.254.169.254 is a link-local address"),
    ("http://10.0.0.7/", "10.0.0.7 is a private address"),
    ("http://192.168.1.1/", "192.168.1.1 is a private address"),
    ("http://[fd00::1]/", "fd00::1 is a private address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://mixed.test/", "mixed.test resolves to 10.0.0.7: 10.0.0.7 is a private address"),
    ("http://nowhere.test/", "nowhere.test does not resolve"),
    ("http://public.test:6379/", "port 6379 is not allowed (only 80 for http)"),
]


def test_results_and_redirects_pointing_inside_are_refused_with_the_reason_and_a_public_page_is_fetched(web):
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
