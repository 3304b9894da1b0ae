"""The one way the service fetches from a host a user chose (a domain's challenge file, a
deal route's liveness answer, an agent's webhook).

Each fetch resolves the name once, refuses it unless every address it resolves to is a
global unicast address (loopback, private, shared, link-local, multicast, reserved,
unspecified, IPv4-mapped and the IPv6 forms that embed an IPv4 address are refused),
then connects to the address that was checked: the URL's host is replaced by that
address, while TLS still verifies the certificate against the name (SNI) and the Host
header keeps it. A second resolution never happens, so DNS rebinding cannot move the
connection. Redirects are not followed (a 3xx is returned to the caller as it is),
proxies from the environment are ignored, the body is read raw with a byte cap, and
the whole exchange has a deadline.

Settings: BROKER_ALLOW_PRIVATE_FETCH (local testing: non-global addresses allowed, and
plain http), BROKER_OUTBOUND_CA_BUNDLE (extra PEM roots beside the public ones) and
BROKER_OUTBOUND_RESOLVE (`host=address[:port]` overrides of DNS, testing only); the first
and the last are refused in production (config.py). Callers must not hold a
database transaction or the write gate while they await a fetch."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import certifi
import httpx

from agent_broker.config import Settings, parse_resolve

Resolver = Callable[[str, int], Awaitable[list[str]]]

DEFAULT_MAX_BYTES = 64 * 1024
USER_AGENT = "agent-broker (outbound check)"


class OutboundRefused(Exception):
    """The fetch was refused or failed; `kind` says which way, `str()` says it in words."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class OutboundResponse:
    status_code: int
    headers: httpx.Headers
    body: bytes
    address: str  # the address actually connected to


@dataclass(frozen=True)
class OutboundPolicy:
    allow_private: bool = False
    # host -> (address, port or None): testing overrides of DNS.
    resolve: Mapping[str, tuple[str, int | None]] = field(default_factory=dict)
    ca_bundle: str | None = None
    connect_timeout: float = 5.0
    read_timeout: float = 10.0

    @classmethod
    def from_settings(cls, settings: Settings) -> OutboundPolicy:
        return cls(
            allow_private=settings.allow_private_fetch,
            resolve=parse_resolve(settings.outbound_resolve),
            ca_bundle=settings.outbound_ca_bundle or None,
        )

    @classmethod
    def for_operator(cls, settings: Settings) -> OutboundPolicy:
        """For hosts the operator configured (identity provider keys, processor APIs):
        they may sit on a private network, so private addresses and plain http are
        allowed; redirects, the byte cap and the deadlines still hold."""
        return cls(allow_private=True, ca_bundle=settings.outbound_ca_bundle or None)


def refusal_of(address: str) -> str | None:
    """Why an address may not be fetched from, or None when it is a global unicast one."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return "an IPv4-mapped IPv6 address"
        embedded = ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None and refusal_of(str(embedded)):
            return "an IPv6 address embedding a non-global IPv4 address"
        if ip in _NAT64:
            return "a NAT64 address"
    if any(ip in network for network in _SPECIAL_PURPOSE):
        return "a special-purpose address"
    checks = (
        (ip.is_loopback, "a loopback address"),
        (ip.is_unspecified, "the unspecified address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_private, "a private address"),
        (ip.is_reserved, "a reserved address"),
        (isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local, "a site-local address"),
        (not ip.is_global, "a non-global address"),
    )
    return next((why for failed, why in checks if failed), None)


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Special-purpose blocks that older Python releases' tables count as global (which of
# them is_global knows depends on the interpreter's patch level): the IETF protocol
# assignments and the IPv6 documentation prefix of 2024.
_SPECIAL_PURPOSE = (ipaddress.ip_network("192.0.0.0/24"), ipaddress.ip_network("3fff::/20"))


async def system_resolver(host: str, port: int) -> list[str]:
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class _Target:
    url: httpx.URL  # the URL with its host replaced by the checked address
    host: str
    host_header: str
    address: str


class OutboundClient:
    def __init__(self, policy: OutboundPolicy, *, resolver: Resolver = system_resolver) -> None:
        self.policy = policy
        self._resolver = resolver

    @cached_property
    def _tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=certifi.where())
        if self.policy.ca_bundle:
            context.load_verify_locations(cafile=self.policy.ca_bundle)
        return context

    async def request(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        deadline_seconds: float | None = None,
    ) -> OutboundResponse:
        """Fetch `url` under the guard; raises OutboundRefused on any refusal or failure."""
        policy = self.policy
        deadline = (
            policy.connect_timeout + policy.read_timeout
            if deadline_seconds is None
            else deadline_seconds
        )
        try:
            async with asyncio.timeout(deadline):
                target = await self._target(url)
                return await self._exchange(method, target, json, content, headers, max_bytes)
        except TimeoutError:
            raise OutboundRefused("timeout", f"no complete answer within {deadline:g} s") from None

    async def get(self, url: str, **kwargs: Any) -> OutboundResponse:
        return await self.request("GET", url, **kwargs)

    async def post(self, url: str, **kwargs: Any) -> OutboundResponse:
        return await self.request("POST", url, **kwargs)

    async def _target(self, raw_url: str) -> _Target:
        try:
            url = httpx.URL(raw_url)
        except (httpx.InvalidURL, TypeError) as exc:
            raise OutboundRefused("invalid_url", f"not a usable URL ({exc})") from None
        schemes = ("https", "http") if self.policy.allow_private else ("https",)
        if url.scheme not in schemes or not url.host:
            raise OutboundRefused("invalid_url", "only https URLs with a host are fetched")
        if url.userinfo:
            raise OutboundRefused("invalid_url", "URLs carrying credentials are not fetched")
        # The ASCII (A-label) form: what DNS, SNI and the Host header carry.
        host = url.raw_host.decode("ascii").lower().rstrip(".")
        default_port = 443 if url.scheme == "https" else 80
        port = url.port or default_port
        addresses, port = await self._addresses(host, port)
        if not self.policy.allow_private:
            for address in addresses:
                why = refusal_of(address)
                if why:
                    raise OutboundRefused("address_refused", f"{host} resolves to {address}, {why}")
        address = addresses[0].split("%", 1)[0]
        literal = f"[{address}]" if ":" in address else address
        named = f"[{host}]" if ":" in host else host
        host_header = named if url.port in (None, default_port) else f"{named}:{url.port}"
        return _Target(
            url=url.copy_with(host=literal, port=port),
            host=host,
            host_header=host_header,
            address=address,
        )

    async def _addresses(self, host: str, port: int) -> tuple[list[str], int]:
        try:
            ipaddress.ip_address(host)
            return [host], port
        except ValueError:
            pass
        override = self.policy.resolve.get(host)
        if override is not None:
            address, override_port = override
            return [address], override_port or port
        try:
            addresses = await self._resolver(host, port)
        except (OSError, UnicodeError) as exc:
            raise OutboundRefused("unresolvable", f"{host} could not be resolved ({exc})") from None
        if not addresses:
            raise OutboundRefused("unresolvable", f"{host} has no address")
        return addresses, port

    async def _exchange(
        self,
        method: str,
        target: _Target,
        json: Any,
        content: bytes | None,
        headers: Mapping[str, str] | None,
        max_bytes: int,
    ) -> OutboundResponse:
        policy = self.policy
        timeout = httpx.Timeout(
            connect=policy.connect_timeout,
            read=policy.read_timeout,
            write=policy.read_timeout,
            pool=policy.connect_timeout,
        )
        sent = httpx.Headers({"User-Agent": USER_AGENT, "Accept-Encoding": "identity"})
        sent.update(headers or {})
        sent["Host"] = target.host_header  # case-insensitive: replaces any caller's Host
        async with httpx.AsyncClient(
            verify=self._tls, timeout=timeout, follow_redirects=False, trust_env=False
        ) as client:
            request = client.build_request(
                method,
                target.url,
                json=json,
                content=content,
                headers=sent,
                extensions={"sni_hostname": target.host},
            )
            try:
                response = await client.send(request, stream=True)
            except httpx.ConnectTimeout:
                raise OutboundRefused(
                    "timeout", f"{target.host} did not accept a connection"
                ) from None
            except httpx.TimeoutException:
                raise OutboundRefused("timeout", f"{target.host} did not answer in time") from None
            except httpx.ConnectError as exc:
                kind = "tls" if _is_tls_failure(exc) else "unreachable"
                raise OutboundRefused(kind, f"{target.host}: {_reason(exc)}") from None
            except httpx.HTTPError as exc:
                raise OutboundRefused("unreachable", f"{target.host}: {_reason(exc)}") from None
            except (ssl.SSLError, OSError) as exc:
                # A TLS fault after the handshake (a bad record, a client certificate the
                # host asks for once the request is sent) reaches here untranslated.
                raise _broken_connection(target.host, exc) from None
            try:
                body = await _read_capped(response, target.host, max_bytes)
            finally:
                await response.aclose()
        return OutboundResponse(
            status_code=response.status_code,
            headers=response.headers,
            body=body,
            address=target.address,
        )


async def _read_capped(response: httpx.Response, host: str, max_bytes: int) -> bytes:
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        raise OutboundRefused("encoding", f"{host} sent a {encoding}-encoded body")
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise OutboundRefused("too_large", f"{host} declared a body over {max_bytes} bytes")
    body = bytearray()
    try:
        async for chunk in response.aiter_raw():
            body += chunk
            if len(body) > max_bytes:
                raise OutboundRefused("too_large", f"{host} sent a body over {max_bytes} bytes")
    except httpx.TimeoutException:
        raise OutboundRefused("timeout", f"{host} stopped sending its answer") from None
    except httpx.HTTPError as exc:
        raise OutboundRefused("unreachable", f"{host}: {_reason(exc)}") from None
    except (ssl.SSLError, OSError) as exc:  # as above, while the answer is read
        raise _broken_connection(host, exc) from None
    return bytes(body)


def _broken_connection(host: str, exc: BaseException) -> OutboundRefused:
    if isinstance(exc, ssl.SSLError):
        kind = "tls"
    else:
        kind = "timeout" if isinstance(exc, TimeoutError) else "unreachable"
    return OutboundRefused(kind, f"{host}: {type(exc).__name__}")


def _is_tls_failure(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError | ssl.CertificateError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "CERTIFICATE" in str(exc).upper() or "SSL" in str(exc).upper()


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    return text or type(exc).__name__
