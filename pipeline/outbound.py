"""The one guard for outbound HTTP whose URL a user can influence (server-side request forgery).

Web pages that search results point to, the web-search API and the LLM server all go through
here. Before every request — the first one and every redirect hop — the host is resolved, every
address it resolves to is checked, and the connection goes to the address that was checked (the
URL is rewritten to that IP while the Host header and the TLS server name / certificate check
keep the name), so a second DNS answer cannot differ from the one that was checked.

Refused: schemes other than http/https; ports other than 80/443 unless allowed; loopback,
private (RFC 1918, fc00::/7), link-local (169.254.0.0/16, fe80::/10), multicast, unspecified,
reserved and any other non-global address, also written as IPv4-mapped/-compatible, 6to4, Teredo
or NAT64 IPv6, or as a decimal/octal/hex number (``2130706433``).

Settings come from the environment (as ``LLM_BASE_URL`` does) or an explicit ``OutboundPolicy``:
``OUTBOUND_ALLOWED_NETWORKS`` (CIDRs a lab allows, e.g. its intranet corpus),
``OUTBOUND_ALLOWED_PORTS`` (ports beyond 80/443) and ``OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS``
(the LLM and search API, which staff set, may be on loopback/private addresses and any port).
docs/security.md explains them.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

if TYPE_CHECKING:
    import httpx2

DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
NAT64 = ipaddress.ip_network("64:ff9b::/96")
# inet_aton's legacy forms: 2130706433, 0x7f000001, 017700000001, 127.1
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]+|[0-9]+)(\.(0x[0-9a-f]+|[0-9]+)){0,3}$")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class OutboundRefused(Exception):
    """The request was not sent; ``reason`` says why (shown to the user as is)."""

    def __init__(self, url: str, reason: str):
        super().__init__(reason)
        self.url = url
        self.reason = reason


_TRUE = {"1", "true", "yes", "on"}


def _networks(raw: str, name: str) -> tuple[Network, ...]:
    networks = []
    for part in re.split(r"[\s,]+", raw.strip()):
        if part:
            try:
                networks.append(ipaddress.ip_network(part, strict=False))
            except ValueError:
                raise ValueError(f"{name}: {part!r} is not a network (write CIDRs such as 10.20.0.0/16)") from None
    return tuple(networks)


def _ports(raw: str, name: str) -> frozenset[int]:
    ports = set()
    for part in re.split(r"[\s,]+", raw.strip()):
        if part:
            if not part.isdigit() or not 0 < int(part) < 65536:
                raise ValueError(f"{name}: {part!r} is not a port number")
            ports.add(int(part))
    return frozenset(ports)


@dataclass(frozen=True)
class OutboundPolicy:
    allowed_networks: tuple[Network, ...] = ()
    """Addresses in these networks pass even when not global (a lab's intranet)."""
    allowed_ports: frozenset[int] = frozenset()
    """Ports allowed besides the scheme's default."""
    allow_private: bool = False
    """Loopback and private (not link-local) addresses pass, on any port: staff-set services only."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, service: bool = False) -> OutboundPolicy:
        """The policy for web pages, or with ``service`` for the LLM and web-search API URLs."""
        env = os.environ if environ is None else environ
        return cls(
            allowed_networks=_networks(env.get("OUTBOUND_ALLOWED_NETWORKS", ""), "OUTBOUND_ALLOWED_NETWORKS"),
            allowed_ports=_ports(env.get("OUTBOUND_ALLOWED_PORTS", ""), "OUTBOUND_ALLOWED_PORTS"),
            allow_private=service and env.get("OUTBOUND_ALLOW_PRIVATE_SERVICE_URLS", "").strip().lower() in _TRUE,
        )


def pages_policy() -> OutboundPolicy:
    return OutboundPolicy.from_env()


def service_policy() -> OutboundPolicy:
    return OutboundPolicy.from_env(service=True)


# Injectable for tests (monkeypatch): how a name becomes addresses, and which (ip, port) a
# checked address is dialled at. Tests map a public-looking address onto a loopback server.
def resolve_host(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise OSError(f"{host} does not resolve ({exc})") from None
    return list(dict.fromkeys(info[4][0] for info in infos))


def dial_address(ip: str, port: int) -> tuple[str, int]:
    return ip, port


def _embedded_ipv4(ip: Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 form carries, with the form's name."""
    if ip.version != 6:
        return None
    if ip.ipv4_mapped:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip.sixtofour:
        return ip.sixtofour, "6to4"
    if ip.teredo:
        return ip.teredo[1], "Teredo"
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"
    if int(ip) >> 32 == 0 and int(ip) > 1:  # ::a.b.c.d, the deprecated IPv4-compatible form
        return ipaddress.IPv4Address(int(ip)), "IPv4-compatible"
    return None


def address_problem(ip: Address, policy: OutboundPolicy) -> str | None:
    """Why ``ip`` may not be contacted, or None."""
    embedded = _embedded_ipv4(ip)
    if embedded:
        inner, form = embedded
        problem = address_problem(inner, policy)
        return f"{problem} (written as {form} IPv6 {ip})" if problem else None
    if ip.is_unspecified:
        return f"{ip} is the unspecified address"
    if ip.is_multicast:
        return f"{ip} is a multicast address"
    if any(ip in network for network in policy.allowed_networks if network.version == ip.version):
        return None
    if ip.is_loopback:
        address_class = "a loopback"
    elif ip.is_link_local:
        return f"{ip} is a link-local address"  # cloud metadata lives here: never a service
    elif ip.is_private:
        address_class = "a private"
    elif ip.is_reserved:
        address_class = "a reserved"
    elif not ip.is_global:
        address_class = "a non-global"
    else:
        return None
    if policy.allow_private and address_class in ("a loopback", "a private"):
        return None
    return f"{ip} is {address_class} address"


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    """As written in the URL (lower case, no brackets)."""
    port: int
    ip: str
    """The checked address to connect to."""


def _host_addresses(host: str, port: int) -> tuple[list[Address], str]:
    """The addresses ``host`` stands for, and how it was read (for messages)."""
    try:
        return [ipaddress.ip_address(host)], ""
    except ValueError:
        pass
    if _NUMERIC_HOST.match(host):
        try:
            ip = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            raise ValueError(f"{host} is not a valid address") from None
        return [ip], f"{host} is {ip}: "
    resolved = resolve_host(host, port)
    if not resolved:
        raise OSError(f"{host} does not resolve")
    return [ipaddress.ip_address(a) for a in resolved], ""


def check_url(url: str, policy: OutboundPolicy) -> Target:
    """Resolve and check ``url``'s host; raises OutboundRefused with the reason."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise OutboundRefused(url, f"not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise OutboundRefused(url, f"only http and https are fetched, not {scheme or 'a URL without scheme'}")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise OutboundRefused(url, "the URL has no host")
    port = port if port is not None else DEFAULT_PORTS[scheme]
    try:
        addresses, how = _host_addresses(host, port)
    except (OSError, ValueError) as exc:
        raise OutboundRefused(url, str(exc)) from None
    for ip in addresses:
        problem = address_problem(ip, policy)
        if problem:
            named = how or (f"{host} resolves to {ip}: " if str(ip) != host else "")
            raise OutboundRefused(url, f"{named}{problem}")
    if port != DEFAULT_PORTS[scheme] and port not in policy.allowed_ports and not policy.allow_private:
        raise OutboundRefused(url, f"port {port} is not allowed (only {DEFAULT_PORTS[scheme]} for {scheme})")
    return Target(scheme=scheme, host=host, port=port, ip=str(addresses[0]))


class GuardedTransport:
    """An httpx transport that checks every request (so every redirect hop too) and connects
    to the checked address. ``policy`` is a callable so settings apply without a new client.
    Duck-typed (httpx needs only these methods), so importing this module loads no httpx:
    settings import it to check the OUTBOUND_* values at start-up."""

    def __init__(self, policy: Callable[[], OutboundPolicy], inner: httpx2.BaseTransport | None = None):
        # httpx: loaded where a client is built, not at start-up
        import httpx2

        self.policy = policy
        self.inner = inner or httpx2.HTTPTransport(trust_env=False)

    def __enter__(self) -> GuardedTransport:
        self.inner.__enter__()
        return self

    def __exit__(self, *exc_info) -> None:
        self.inner.__exit__(*exc_info)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        # httpx: loaded where a client is built, not at start-up
        import httpx2

        target = check_url(str(request.url), self.policy())
        ip, port = dial_address(target.ip, target.port)
        # A copy for the connection: the caller's request keeps the name, which httpx's own
        # redirects resolve against. Host keeps the name (set when the request was built), and
        # TLS sends and checks the name.
        extensions = (
            {**request.extensions, "sni_hostname": target.host} if target.scheme == "https" else request.extensions
        )
        pinned = httpx2.Request(
            request.method,
            request.url.copy_with(host=ip, port=port),
            headers=request.headers,
            stream=request.stream,
            extensions=extensions,
        )
        return self.inner.handle_request(pinned)

    def close(self) -> None:
        self.inner.close()


def guarded_client(
    policy: Callable[[], OutboundPolicy],
    *,
    timeout: float,
    follow_redirects: bool = False,
    **kwargs,
) -> httpx2.Client:
    """An httpx client whose every request goes through the guard (no proxies from the env)."""
    # httpx: loaded where a client is built, not at start-up
    import httpx2

    return httpx2.Client(
        transport=GuardedTransport(policy),
        timeout=timeout,
        follow_redirects=follow_redirects,
        trust_env=False,
        **kwargs,
    )


@contextmanager
def get_following_redirects(
    client: httpx2.Client,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, str] | None = None,
    max_redirects: int = MAX_REDIRECTS,
) -> Iterator[httpx2.Response]:
    """GET ``url`` streamed, following at most ``max_redirects`` redirects by hand; each hop goes
    through the client's guard. Credentials are not carried to another host."""
    headers = dict(headers or {})
    request = client.build_request("GET", url, headers=headers, params=params)
    url = str(request.url)  # with the query
    for _ in range(max_redirects + 1):
        response = client.send(request, stream=True)
        location = response.headers.get("Location")
        if response.status_code not in REDIRECTS or not location:
            try:
                yield response
            finally:
                response.close()
            return
        response.close()
        next_url = urljoin(url, location)
        if urlsplit(next_url).hostname != urlsplit(url).hostname:
            headers = {k: v for k, v in headers.items() if k.lower() not in ("authorization", "cookie")}
        url = next_url
        request = client.build_request("GET", url, headers=headers)
    raise OutboundRefused(url, f"more than {max_redirects} redirects")
