"""A loopback server that plays both a search API and the web, for the web-search tests.

The search API is the server's loopback address (allowed as a lab's private service); pages are
at ``public.test``, which the guard's resolver (pointed at a test table) resolves to a public
address that is then dialled on the loopback server, so a test never leaves loopback.
Plain Python (no Django): the pipeline tests use it too."""

import json
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from pipeline import outbound
from pipeline.websearch import WebSearchConfig

PUBLIC_IP = "93.184.216.34"
PAGES = "http://public.test"
# Names of the test's own DNS table; any other name does not resolve (no real DNS lookup).
ADDRESSES = {
    "public.test": [PUBLIC_IP],
    "localhost": ["127.0.0.1", "::1"],
    "loopback.test": ["127.0.0.1"],
    "mixed.test": [PUBLIC_IP, "10.0.0.7"],
    "metadata.test": ["169.254.169.254"],
}
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
        except (
            BrokenPipeError,
            ConnectionResetError,
        ):  # the client gave up (its timeout), as tested
            pass

    def do_GET(self):
        parts = urlsplit(self.path)
        Web.seen.append((parts.path, self.headers.get("Authorization")))
        Web.hosts.append(self.headers.get("Host"))
        base = PAGES
        own = f"http://127.0.0.1:{self.server.server_port}"
        if parts.path == "/secret":
            return self.reply(
                200,
                f"<html><body><article><p>{SECRET}.</p></article></body></html>".encode(),
                "text/html",
            )
        if parts.path.startswith("/redirect/"):
            targets = {
                "loopback": f"{own}/secret",
                "loopback-default-port": "http://127.0.0.1/secret",
                "decimal": "http://2130706433/secret",
                "name": "http://loopback.test/secret",
                "metadata": "http://169.254.169.254/latest/meta-data/",
                "relative": "/curie",
                "public": f"{PAGES}/curie",
                "again": f"{PAGES}/redirect/again",
                "gopher": "gopher://public.test/",
            }
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
                return self.reply(
                    200,
                    json.dumps({"results": [], "pad": "x" * 200_000}).encode(),
                    "application/json",
                )
            if query == "broken":
                return self.reply(503, b"busy", "text/plain")
            if query == "not json":
                return self.reply(200, b"<html>search page</html>", "text/html")
            results = [
                {"url": f"{base}/{name}", "title": name.title(), "content": "snippet"}
                for name in (
                    "curie",
                    "curie",
                    "pdf",
                    "missing",
                    "slowpage",
                    "huge",
                    "javascript-only",
                )
            ]
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
    return [
        f"{own}/secret",
        "http://127.0.0.1/secret",
        "http://localhost/secret",
        f"{PAGES}/redirect/loopback",
        f"{PAGES}/redirect/loopback-default-port",
        f"{PAGES}/redirect/decimal",
        f"{PAGES}/redirect/name",
        f"{PAGES}/redirect/metadata",
        f"{PAGES}/redirect/again",
        f"{PAGES}/redirect/gopher",
        "http://0.0.0.0/secret",
        "http://[::1]/secret",
        "http://[::ffff:127.0.0.1]/secret",
        "http://2130706433/secret",
        "http://0x7f.1/secret",
        "http://017700000001/secret",
        "http://loopback.test/secret",
        "http://169.254.169.254/latest/meta-data/",
        "http://metadata.test/",
        "http://10.0.0.7/",
        "http://192.168.1.1/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        "http://mixed.test/",
        "http://nowhere.test/",
        f"{PAGES}:6379/",
        f"{PAGES}/redirect/public",
    ]


def route_test_network(monkeypatch, port: int) -> None:
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
    (
        "http://[::ffff:127.0.0.1]/secret",
        "127.0.0.1 is a loopback address (written as IPv4-mapped IPv6 ::ffff:7f00:1)",
    ),
    ("http://2130706433/secret", "2130706433 is 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("http://0x7f.1/secret", "0x7f.1 is 127.0.0.1: 127.0.0.1 is a loopback address"),
    ("http://017700000001/secret", "017700000001 is 127.0.0.1: 127.0.0.1 is a loopback address"),
    (
        "http://loopback.test/secret",
        "loopback.test resolves to 127.0.0.1: 127.0.0.1 is a loopback address",
    ),
    ("http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"),
    (
        "http://metadata.test/",
        "metadata.test resolves to 169.254.169.254: 169.254.169.254 is a link-local address",
    ),
    ("http://10.0.0.7/", "10.0.0.7 is a private address"),
    ("http://192.168.1.1/", "192.168.1.1 is a private address"),
    ("http://[fd00::1]/", "fd00::1 is a private address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://mixed.test/", "mixed.test resolves to 10.0.0.7: 10.0.0.7 is a private address"),
    ("http://nowhere.test/", "nowhere.test does not resolve"),
    ("http://public.test:6379/", "port 6379 is not allowed (only 80 for http)"),
]


@contextmanager
def web_server(monkeypatch):
    """The loopback server, running; yields the search configuration that points at it."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Web)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Web.seen, Web.hosts, Web.dialled = [], [], []
    route_test_network(monkeypatch, server.server_port)
    monkeypatch.setenv("OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS", "1")  # the search API is this loopback server
    try:
        yield WebSearchConfig(
            base_url=f"http://127.0.0.1:{server.server_port}/",
            api_key="search-key",
            timeout=0.5,
            max_page_bytes=100_000,
            results_per_query=10,
        )
    finally:
        server.shutdown()
        server.server_close()
