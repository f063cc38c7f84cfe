"""The outbound guard (pipeline.outbound) on its own: each address class, the settings, the
pinned connection. No request leaves loopback: names resolve from a table, and the transport
under the guard is httpx's mock transport."""

import ipaddress

import httpx2
import pytest

from pipeline import outbound
from pipeline.outbound import (
    GuardedTransport,
    OutboundPolicy,
    OutboundRefused,
    address_problem,
    check_url,
)

PAGES = OutboundPolicy()
NAMES = {
    "public.test": ["93.184.216.34"],
    "v6.test": ["2606:2800:220:1:248:1893:25c8:1946"],
    "loopback.test": ["127.0.0.1"],
    "rebind.test": ["93.184.216.34", "127.0.0.1"],
}


@pytest.fixture(autouse=True)
def table(monkeypatch):
    def resolve(host, port):
        if host not in NAMES:
            raise OSError(f"{host} does not resolve")
        return NAMES[host]

    monkeypatch.setattr(outbound, "resolve_host", resolve)


@pytest.mark.parametrize(
    "address, problem",
    [
        ("127.0.0.1", "127.0.0.1 is a loopback address"),
        ("127.255.1.2", "127.255.1.2 is a loopback address"),
        ("::1", "::1 is a loopback address"),
        ("10.1.2.3", "10.1.2.3 is a private address"),
        ("172.16.0.1", "172.16.0.1 is a private address"),
        ("192.168.0.1", "192.168.0.1 is a private address"),
        ("fc00::1", "fc00::1 is a private address"),
        ("fd12:3456::1", "fd12:3456::1 is a private address"),
        ("169.254.169.254", "169.254.169.254 is a link-local address"),
        ("fe80::1", "fe80::1 is a link-local address"),
        ("224.0.0.1", "224.0.0.1 is a multicast address"),
        ("ff02::1", "ff02::1 is a multicast address"),
        ("0.0.0.0", "0.0.0.0 is the unspecified address"),
        ("::", ":: is the unspecified address"),
        (
            "240.0.0.1",
            "240.0.0.1 is a private address",
        ),  # reserved, which ipaddress also counts as private
        ("100.64.0.1", "100.64.0.1 is a non-global address"),  # carrier-grade NAT
        ("192.0.2.1", "192.0.2.1 is a private address"),  # documentation
        (
            "::ffff:127.0.0.1",
            "127.0.0.1 is a loopback address (written as IPv4-mapped IPv6 ::ffff:7f00:1)",
        ),
        (
            "::ffff:169.254.169.254",
            "169.254.169.254 is a link-local address (written as IPv4-mapped IPv6 ::ffff:a9fe:a9fe)",
        ),
        (
            "::ffff:10.0.0.1",
            "10.0.0.1 is a private address (written as IPv4-mapped IPv6 ::ffff:a00:1)",
        ),
        ("2002:7f00:1::", "127.0.0.1 is a loopback address (written as 6to4 IPv6 2002:7f00:1::)"),
        (
            "64:ff9b::a9fe:a9fe",
            "169.254.169.254 is a link-local address (written as NAT64 IPv6 64:ff9b::a9fe:a9fe)",
        ),
        (
            "::127.0.0.1",
            "127.0.0.1 is a loopback address (written as IPv4-compatible IPv6 ::7f00:1)",
        ),
        ("93.184.216.34", None),
        ("2606:2800:220:1:248:1893:25c8:1946", None),
        ("::ffff:93.184.216.34", None),
    ],
)
def test_each_address_class(address, problem):
    assert address_problem(ipaddress.ip_address(address), PAGES) == problem


@pytest.mark.parametrize(
    "url, reason",
    [
        ("ftp://public.test/", "only http and https are fetched, not ftp"),
        ("file:///etc/passwd", "only http and https are fetched, not file"),
        ("http:///nohost", "the URL has no host"),
        ("http://public.test:99999/", "not a valid URL"),
        ("http://public.test:8080/", "port 8080 is not allowed (only 80 for http)"),
        ("https://public.test:80/", "port 80 is not allowed (only 443 for https)"),
        ("http://2130706433/", "2130706433 is 127.0.0.1: 127.0.0.1 is a loopback address"),
        ("http://0x7f000001/", "0x7f000001 is 127.0.0.1: 127.0.0.1 is a loopback address"),
        ("http://0177.0.0.1/", "0177.0.0.1 is 127.0.0.1: 127.0.0.1 is a loopback address"),
        ("http://127.1/", "127.1 is 127.0.0.1: 127.0.0.1 is a loopback address"),
        ("http://999999999999/", "999999999999 is not a valid address"),
        ("http://[::ffff:7f00:1]/", "127.0.0.1 is a loopback address"),
        (
            "http://loopback.test./",
            "loopback.test resolves to 127.0.0.1: 127.0.0.1 is a loopback address",
        ),
        (
            "http://LOOPBACK.TEST/",
            "loopback.test resolves to 127.0.0.1: 127.0.0.1 is a loopback address",
        ),
        (
            "http://rebind.test/",
            "rebind.test resolves to 127.0.0.1: 127.0.0.1 is a loopback address",
        ),  # any bad answer refuses
        ("http://unknown.test/", "unknown.test does not resolve"),
    ],
)
def test_urls_refused_with_the_reason(url, reason):
    with pytest.raises(OutboundRefused) as refused:
        check_url(url, PAGES)
    assert reason in refused.value.reason


def test_a_public_url_gives_the_address_to_connect_to():
    assert check_url("https://public.test/a?b", PAGES) == outbound.Target("https", "public.test", 443, "93.184.216.34")
    assert check_url("http://v6.test/", PAGES).ip == "2606:2800:220:1:248:1893:25c8:1946"
    assert check_url("http://93.184.216.34/", PAGES).ip == "93.184.216.34"


def test_settings_from_the_environment():
    assert OutboundPolicy.from_env({}) == OutboundPolicy()
    assert OutboundPolicy.from_env({"OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS": "1"}).allow_private is False  # pages never
    policy = OutboundPolicy.from_env(
        {
            "OUTBOUND_ALLOWED_NETWORKS": "10.20.0.0/16, fd00:1::/32",
            "OUTBOUND_ALLOWED_PORTS": "8080 8443",
            "OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS": "yes",
        },
        service=True,
    )
    assert policy.allow_private and policy.allowed_ports == {8080, 8443}
    assert [str(n) for n in policy.allowed_networks] == ["10.20.0.0/16", "fd00:1::/32"]
    with pytest.raises(ValueError, match="OUTBOUND_ALLOWED_NETWORKS: 'intranet' is not a network"):
        OutboundPolicy.from_env({"OUTBOUND_ALLOWED_NETWORKS": "intranet"})
    with pytest.raises(ValueError, match="OUTBOUND_ALLOWED_PORTS: '70000' is not a port number"):
        OutboundPolicy.from_env({"OUTBOUND_ALLOWED_PORTS": "70000"})


def test_allowed_networks_admit_only_their_range_and_never_multicast_or_unspecified():
    policy = OutboundPolicy(allowed_networks=(ipaddress.ip_network("10.20.0.0/16"), ipaddress.ip_network("0.0.0.0/0")))
    assert address_problem(ipaddress.ip_address("10.20.3.4"), policy) is None
    assert address_problem(ipaddress.ip_address("::ffff:10.20.3.4"), policy) is None
    assert address_problem(ipaddress.ip_address("0.0.0.0"), policy) == "0.0.0.0 is the unspecified address"
    assert address_problem(ipaddress.ip_address("224.0.0.1"), policy) == "224.0.0.1 is a multicast address"
    narrow = OutboundPolicy(allowed_networks=(ipaddress.ip_network("10.20.0.0/16"),))
    assert address_problem(ipaddress.ip_address("10.21.0.1"), narrow) == "10.21.0.1 is a private address"


def test_private_services_allow_loopback_and_private_but_never_link_local():
    services = OutboundPolicy(allow_private=True)
    for ok in ("127.0.0.1", "::1", "10.0.0.5", "192.168.1.10", "fd00::5"):
        assert address_problem(ipaddress.ip_address(ok), services) is None, ok
    for refused in ("169.254.169.254", "fe80::1", "0.0.0.0", "224.0.0.1"):
        assert address_problem(ipaddress.ip_address(refused), services), refused
    assert check_url("http://127.0.0.1:11434/v1", services).port == 11434  # any port for services


def test_the_transport_connects_to_the_checked_address_with_the_name_as_host_and_tls_name(
    monkeypatch,
):
    seen = []

    def answer(request):
        seen.append(request)
        return httpx2.Response(200, text="ok")

    names = iter([["93.184.216.34"], ["127.0.0.1"]])  # a second lookup would answer loopback
    monkeypatch.setattr(outbound, "resolve_host", lambda host, port: next(names))
    with httpx2.Client(transport=GuardedTransport(lambda: PAGES, inner=httpx2.MockTransport(answer))) as client:
        assert client.get("https://public.test/page").text == "ok"
        with pytest.raises(OutboundRefused, match="127.0.0.1 is a loopback address"):
            client.get("https://public.test/page")  # the name now points inside: refused, not connected
    [request] = seen
    assert request.url.host == "93.184.216.34" and request.url.port is None
    assert request.headers["Host"] == "public.test" and request.extensions["sni_hostname"] == "public.test"


def test_redirects_are_checked_at_every_hop_and_credentials_stay_with_the_host():
    seen = []

    def answer(request):
        seen.append((request.headers["Host"], request.url.path, request.headers.get("Authorization")))
        if request.url.path == "/start":
            return httpx2.Response(302, headers={"Location": "http://93.184.216.34/next"})
        if request.url.path == "/next":
            return httpx2.Response(307, headers={"Location": "http://loopback.test/admin"})
        return httpx2.Response(200, text="inside")

    with httpx2.Client(transport=GuardedTransport(lambda: PAGES, inner=httpx2.MockTransport(answer))) as client:
        with pytest.raises(
            OutboundRefused,
            match="loopback.test resolves to 127.0.0.1: 127.0.0.1 is a loopback address",
        ):
            with outbound.get_following_redirects(
                client, "http://public.test/start", headers={"Authorization": "Bearer k"}
            ):
                pass
    assert seen == [("public.test", "/start", "Bearer k"), ("93.184.216.34", "/next", None)]


def test_httpx_own_redirects_resolve_against_the_name_and_are_checked_too():
    """The LLM client lets httpx follow redirects: a relative one stays on the name (Host, TLS
    name), one to an internal address is refused."""
    seen = []

    def answer(request):
        seen.append(
            (
                request.headers["Host"],
                request.url.host,
                request.url.path,
                request.extensions.get("sni_hostname"),
            )
        )
        if request.url.path == "/v1/models":
            return httpx2.Response(307, headers={"Location": "/v2/models"})
        if request.url.path == "/v2/models":
            return httpx2.Response(200, text="ok")
        return httpx2.Response(302, headers={"Location": "http://[::ffff:169.254.169.254]/latest/meta-data/"})

    transport = GuardedTransport(lambda: PAGES, inner=httpx2.MockTransport(answer))
    with httpx2.Client(transport=transport, follow_redirects=True) as client:
        assert client.get("https://public.test/v1/models").text == "ok"
        with pytest.raises(OutboundRefused, match="169.254.169.254 is a link-local address"):
            client.get("https://public.test/metadata")
    assert seen[:2] == [
        ("public.test", "93.184.216.34", "/v1/models", "public.test"),
        ("public.test", "93.184.216.34", "/v2/models", "public.test"),
    ]
    assert len(seen) == 3
