"""The guarded outbound client (agent_broker/http/outbound.py): a name is resolved once,
every address it resolves to is checked, the connection goes to the checked address while
TLS and the Host header keep the name; no redirects, no environment proxies, a byte cap,
no encoded bodies and a deadline.

Nothing here touches the internet or real DNS: every client gets a resolver (or a
`resolve=` override), the system resolver is made to fail for names, and the tests whose
addresses are not local refuse any connection attempt."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import time
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from agent_broker.config import Settings, parse_resolve
from agent_broker.http.outbound import (
    OutboundClient,
    OutboundPolicy,
    OutboundRefused,
    OutboundResponse,
    refusal_of,
)
from tests.support.tls import Answer, TLSServer, tls_server

NAME = "agents.dev"
STRONG = "a" * 40


# --- harness -------------------------------------------------------------------------------


@pytest.fixture
def server(tmp_path) -> Iterator[TLSServer]:
    """An HTTPS server on 127.0.0.1 whose certificate covers NAME and the IP 127.0.0.1."""
    with tls_server(tmp_path, NAME, "127.0.0.1") as srv:
        yield srv


@pytest.fixture(autouse=True)
def system_lookups(monkeypatch) -> list[str]:
    """The system resolver fails for any name (numeric addresses, which need no DNS, pass
    through); the names asked for are recorded, so a test can show none was looked up."""
    asked: list[str] = []
    real = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kwargs: Any) -> Any:
        text = host.decode() if isinstance(host, bytes) else str(host)
        try:
            if ":" in text:
                socket.inet_pton(socket.AF_INET6, text.split("%", 1)[0])
            else:
                socket.inet_aton(text)  # also the forms 0x7f000001, 2130706433, 127.1
        except OSError:
            asked.append(text)
            raise socket.gaierror(socket.EAI_NONAME, f"tests do not resolve {text}") from None
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)
    return asked


@pytest.fixture
def no_connection(monkeypatch) -> None:
    """Any attempt to send a request fails the test (for addresses that are not local)."""

    async def refuse(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> Any:
        raise AssertionError(f"a connection was attempted to {request.url}")

    monkeypatch.setattr(httpx.AsyncClient, "send", refuse)


@pytest.fixture
def captured(monkeypatch) -> list[httpx.Request]:
    """Requests are recorded where they would leave (the transport is never reached) and
    fail as a connection error would."""
    sent: list[httpx.Request] = []

    async def capture(self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any) -> Any:
        sent.append(request)
        raise httpx.ConnectError("not connecting in tests", request=request)

    monkeypatch.setattr(httpx.AsyncClient, "send", capture)
    return sent


async def no_dns(host: str, port: int) -> list[str]:
    raise AssertionError(f"the resolver was asked for {host}:{port}")


def answering(*addresses: str):
    """A resolver that answers `addresses` and records what it was asked."""
    calls: list[tuple[str, int]] = []

    async def resolver(host: str, port: int) -> list[str]:
        calls.append((host, port))
        return list(addresses)

    resolver.calls = calls  # type: ignore[attr-defined]
    return resolver


def client_for(
    server: TLSServer | None = None,
    *,
    allow_private: bool = True,
    resolve: Mapping[str, tuple[str, int | None]] | None = None,
    trust_test_ca: bool = True,
    resolver=no_dns,
    **policy: Any,
) -> OutboundClient:
    """A client whose NAME points at `server` (unless `resolve` says otherwise) and which
    trusts the server's CA."""
    if resolve is None:
        resolve = {NAME: ("127.0.0.1", server.port)} if server else {}
    ca_bundle = str(server.ca_path) if server and trust_test_ca else None
    return OutboundClient(
        OutboundPolicy(allow_private=allow_private, resolve=resolve, ca_bundle=ca_bundle, **policy),
        resolver=resolver,
    )


def fetch(client: OutboundClient, url: str, method: str = "GET", **kwargs: Any) -> OutboundResponse:
    return asyncio.run(client.request(method, url, **kwargs))


def refused(
    client: OutboundClient, url: str, method: str = "GET", **kwargs: Any
) -> OutboundRefused:
    with pytest.raises(OutboundRefused) as info:
        fetch(client, url, method, **kwargs)
    return info.value


# --- the happy path ------------------------------------------------------------------------


def test_a_fetch_reaches_the_overridden_address_with_the_name_as_host(server, system_lookups):
    server.answer("/.well-known/agent-broker.txt", Answer(200, b"proof-token"))

    response = fetch(client_for(server), f"https://{NAME}/.well-known/agent-broker.txt")

    assert response.status_code == 200
    assert response.body == b"proof-token"
    assert response.address == "127.0.0.1"
    (seen,) = server.seen
    assert (seen.method, seen.path, seen.host) == ("GET", "/.well-known/agent-broker.txt", NAME)
    assert system_lookups == []


def test_a_post_carries_its_json_body(server):
    server.answer("/hook", Answer(202, b"ok"))
    payload = {"event": "deal.accepted", "amount_micro": 1_500_000, "note": "grüße"}

    response = fetch(client_for(server), f"https://{NAME}/hook", "POST", json=payload)
    assert response.status_code == 202

    (seen,) = server.seen
    assert (seen.method, seen.path) == ("POST", "/hook")
    assert json.loads(seen.body) == payload


def test_the_post_helper_is_a_post(server):
    server.answer("/hook", Answer(200, b"ok"))
    asyncio.run(client_for(server).post(f"https://{NAME}/hook", json={"a": 1}))
    assert [(s.method, json.loads(s.body)) for s in server.seen] == [("POST", {"a": 1})]


# --- addresses -----------------------------------------------------------------------------


def test_a_name_overridden_to_loopback_is_refused_when_private_is_off(server):
    client = client_for(server, allow_private=False)

    error = refused(client, f"https://{NAME}/x")

    assert error.kind == "address_refused"
    assert "127.0.0.1" in str(error)
    assert server.seen == []


def test_a_name_resolving_to_loopback_is_refused_when_private_is_off(server):
    resolver = answering("127.0.0.1")
    client = client_for(server, allow_private=False, resolve={}, resolver=resolver)

    error = refused(client, f"https://{NAME}:{server.port}/x")

    assert error.kind == "address_refused"
    assert resolver.calls == [(NAME, server.port)]
    assert server.seen == []


@pytest.mark.parametrize(
    "addresses",
    [("93.184.216.34", "10.0.0.5"), ("10.0.0.5", "93.184.216.34"), ("8.8.8.8", "8.8.4.4", "::1")],
)
def test_every_resolved_address_is_checked(addresses, no_connection):
    client = client_for(allow_private=False, resolver=answering(*addresses))

    error = refused(client, f"https://{NAME}/x")

    assert error.kind == "address_refused"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.8.9.10",
        "10.1.2.3",
        "172.16.0.1",
        "172.31.255.254",
        "192.168.1.1",
        "100.64.0.1",  # shared address space (carrier-grade NAT)
        "169.254.169.254",  # cloud metadata, link-local
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "192.0.2.1",  # documentation
        "198.18.0.1",  # benchmarking
        "192.0.0.8",  # IETF protocol assignments (some Python releases call it global)
        "192.0.0.200",
        "3fff::1",  # IPv6 documentation, 2024
        "::1",
        "::",
        "fe80::1",
        "fe80::1%eth0",
        "fc00::1",
        "fec0::1",
        "fd12:3456::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:8.8.8.8",  # IPv4-mapped is always refused
        "2002:0a00:0001::",  # 6to4 embedding 10.0.0.1
        "2002:7f00:0001::1",  # 6to4 embedding 127.0.0.1
        "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
        "64:ff9b::808:808",  # NAT64, even of a public address
        "2001:db8::1",  # documentation
    ],
)
def test_refusal_of_refuses_non_global_addresses(address):
    assert refusal_of(address) is not None


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111", "2002:0808:0808::1"]
)
def test_refusal_of_allows_global_unicast_addresses(address):
    assert refusal_of(address) is None


def test_refusal_of_names_the_reason():
    assert "loopback" in refusal_of("127.0.0.1")
    assert "mapped" in refusal_of("::ffff:8.8.8.8")
    assert "NAT64" in refusal_of("64:ff9b::808:808")
    assert "embedding" in refusal_of("2002:0a00:0001::")


def test_an_ipv4_literal_url_is_checked(server):
    url = f"https://127.0.0.1:{server.port}/x"
    server.answer("/x", Answer(200, b"literal"))

    error = refused(client_for(server, allow_private=False), url)
    assert error.kind == "address_refused"
    assert server.seen == []

    # The same URL is fine when private addresses are allowed: the refusal was the policy's.
    response = fetch(client_for(server), url)
    assert (response.status_code, response.body, response.address) == (200, b"literal", "127.0.0.1")
    assert server.seen[0].host == f"127.0.0.1:{server.port}"


@pytest.mark.parametrize(
    "url", ["https://[::1]/x", "https://[::ffff:127.0.0.1]/x", "https://127.0.0.1./x"]
)
def test_ip_literal_urls_of_private_addresses_are_refused(url, no_connection):
    error = refused(client_for(allow_private=False), url)
    assert error.kind == "address_refused"


@pytest.mark.parametrize("host", ["0x7f000001", "2130706433", "127.1", "10.1"])
def test_numeric_forms_the_system_resolver_accepts_are_checked(host, system_lookups, no_connection):
    """httpx leaves these hosts as they are and they are not IP literals to `ipaddress`,
    so they reach the (real, default) resolver, which reads them as addresses without
    DNS: the address it answers is what gets checked."""
    client = OutboundClient(OutboundPolicy(allow_private=False))

    error = refused(client, f"https://{host}/x")

    assert error.kind == "address_refused"
    assert system_lookups == []


def test_an_override_does_not_bypass_the_check(no_connection):
    client = client_for(allow_private=False, resolve={NAME: ("10.0.0.1", 443)})
    assert refused(client, f"https://{NAME}/x").kind == "address_refused"


# --- DNS rebinding -------------------------------------------------------------------------


def test_the_name_is_resolved_once_and_the_checked_address_is_the_one_connected_to(
    server, system_lookups
):
    calls: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return ["127.0.0.1"] if len(calls) == 1 else ["10.9.9.9"]

    server.answer("/x", Answer(200, b"first answer"))
    client = client_for(server, resolve={}, resolver=rebinding)

    response = fetch(client, f"https://{NAME}:{server.port}/x")

    assert (response.status_code, response.body) == (200, b"first answer")
    assert response.address == "127.0.0.1"
    assert calls == [NAME]
    # Nothing below the client looked the name up again (the system resolver fails for
    # names and records them), and TLS was verified against the name with the Host kept.
    assert system_lookups == []
    assert server.seen[0].host == f"{NAME}:{server.port}"


def test_the_request_is_sent_to_the_checked_address_under_the_name(captured):
    """With private addresses refused, a rebinding resolver answering a public address and
    then loopback: the request handed to the transport targets the checked public address
    (an IP literal, so no later lookup can move it), with SNI and Host keeping the name."""
    answers = iter([["93.184.216.34"], ["127.0.0.1"]])
    calls: list[str] = []

    async def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)
        return next(answers)

    error = refused(client_for(allow_private=False, resolver=rebinding), f"https://{NAME}/x")

    assert error.kind == "unreachable"
    assert calls == [NAME]
    (request,) = captured
    assert request.url.host == "93.184.216.34"
    assert request.url.port is None  # 443
    assert request.url.path == "/x"
    assert request.headers["host"] == NAME
    assert request.extensions["sni_hostname"] == NAME


# --- redirects, body, encoding -------------------------------------------------------------


def test_redirects_are_returned_not_followed(server):
    server.answer("/start", Answer(302, b"", {"Location": "/elsewhere"}))
    server.answer("/elsewhere", Answer(200, b"followed"))

    response = fetch(client_for(server), f"https://{NAME}/start")

    assert response.status_code == 302
    assert response.headers["location"] == "/elsewhere"
    assert server.paths_seen() == ["/start"]


def test_an_absolute_redirect_is_not_followed_either(server):
    server.answer("/start", Answer(301, b"", {"Location": f"https://{NAME}/elsewhere"}))
    response = fetch(client_for(server), f"https://{NAME}/start")
    assert response.status_code == 301
    assert server.paths_seen() == ["/start"]


@pytest.mark.parametrize("declare_length", [True, False])
def test_a_body_over_the_cap_is_refused(server, declare_length):
    server.answer("/big", Answer(200, b"x" * 101, declare_length=declare_length))

    error = refused(client_for(server), f"https://{NAME}/big", max_bytes=100)

    assert error.kind == "too_large"


@pytest.mark.parametrize("declare_length", [True, False])
def test_a_body_of_exactly_the_cap_is_accepted(server, declare_length):
    server.answer("/full", Answer(200, b"x" * 100, declare_length=declare_length))

    response = fetch(client_for(server), f"https://{NAME}/full", max_bytes=100)

    assert response.body == b"x" * 100


def test_a_declared_length_over_the_cap_is_refused_before_reading(server):
    # The answer claims a megabyte but sends two bytes and closes: only a refusal on the
    # declared length says too_large (reading would end in a truncated-body error).
    big = Answer(200, b"xx", {"Content-Length": "1000000"}, declare_length=False)
    server.answer("/claims", big)

    error = refused(client_for(server), f"https://{NAME}/claims", max_bytes=100)

    assert error.kind == "too_large"
    assert "declared" in str(error)


def test_a_large_undeclared_body_is_cut_off(server):
    server.answer("/huge", Answer(200, b"y" * 2_000_000, declare_length=False))
    error = refused(client_for(server), f"https://{NAME}/huge")  # default cap, 64 KiB
    assert error.kind == "too_large"


def test_an_encoded_body_is_refused(server):
    body = gzip.compress(b"proof-token")
    server.answer("/gz", Answer(200, body, {"Content-Encoding": "gzip"}))

    error = refused(client_for(server), f"https://{NAME}/gz")

    assert error.kind == "encoding"


def test_identity_encoding_is_asked_for_and_accepted(server):
    server.answer("/plain", Answer(200, b"raw", {"Content-Encoding": "identity"}))
    assert fetch(client_for(server), f"https://{NAME}/plain").body == b"raw"


# --- TLS -----------------------------------------------------------------------------------


def test_a_certificate_from_an_unknown_ca_is_refused(server):
    server.answer("/x", Answer(200, b"secret"))
    error = refused(client_for(server, trust_test_ca=False), f"https://{NAME}/x")
    assert error.kind == "tls"
    assert server.seen == []


def test_a_certificate_for_another_name_is_refused(server):
    server.answer("/x", Answer(200, b"secret"))
    client = client_for(server, resolve={"other.dev": ("127.0.0.1", server.port)})

    error = refused(client, "https://other.dev/x")

    assert error.kind == "tls"
    assert server.seen == []


def test_a_tls_fault_after_the_handshake_is_a_refusal(server):
    # A bad record once the request is in: it must come back as a refusal the caller
    # handles, not as the raw ssl error.
    server.answer("/x", Answer(break_tls=True))
    error = refused(client_for(server), f"https://{NAME}/x", "POST", content=b"{}")
    assert error.kind in ("tls", "unreachable")
    assert server.paths_seen() == ["/x"]


# --- time ----------------------------------------------------------------------------------


def test_the_deadline_bounds_the_whole_exchange(server):
    server.answer("/slow", Answer(200, b"late", delay_seconds=3))
    client = client_for(server)

    started = time.monotonic()
    error = refused(client, f"https://{NAME}/slow", deadline_seconds=0.5)
    elapsed = time.monotonic() - started
    server.release.set()

    assert error.kind == "timeout"
    assert elapsed < 2


def test_the_read_timeout_applies_without_a_deadline(server):
    server.answer("/slow", Answer(200, b"late", delay_seconds=3))
    client = client_for(server, read_timeout=0.5)

    started = time.monotonic()
    error = refused(client, f"https://{NAME}/slow")
    elapsed = time.monotonic() - started
    server.release.set()

    assert error.kind == "timeout"
    assert elapsed < 2


def test_a_slow_resolver_counts_against_the_deadline():
    async def stalling(host: str, port: int) -> list[str]:
        await asyncio.sleep(3)
        return ["127.0.0.1"]

    started = time.monotonic()
    error = refused(client_for(resolver=stalling), f"https://{NAME}/x", deadline_seconds=0.3)
    assert error.kind == "timeout"
    assert time.monotonic() - started < 2


# --- URLs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        f"http://{NAME}/x",
        f"ftp://{NAME}/x",
        f"https://user:secret@{NAME}/x",
        f"https://user@{NAME}/x",
        "https:///x",
        "/relative/path",
        "not a url at all",
    ],
)
def test_unusable_urls_are_refused_before_any_lookup(url, no_connection):
    error = refused(client_for(allow_private=False), url)
    assert error.kind == "invalid_url"


def test_userinfo_and_ftp_stay_refused_when_private_is_allowed(no_connection):
    client = client_for(allow_private=True)
    assert refused(client, f"https://user:secret@{NAME}/x").kind == "invalid_url"
    assert refused(client, f"ftp://{NAME}/x").kind == "invalid_url"


def test_plain_http_is_allowed_only_with_private_fetch(captured):
    client = client_for(resolve={NAME: ("127.0.0.1", None)})

    assert refused(client, f"http://{NAME}/x").kind == "unreachable"
    assert [(r.url.scheme, r.url.host, r.url.port) for r in captured] == [
        ("http", "127.0.0.1", None)
    ]


# --- names and headers as sent --------------------------------------------------------------


def test_an_ipv6_literal_keeps_its_brackets_in_the_host_header(captured):
    client = client_for(allow_private=False)

    refused(client, "https://[2606:4700:4700::1111]:8443/x")

    (request,) = captured
    assert request.url.host == "2606:4700:4700::1111"
    assert request.headers["host"] == "[2606:4700:4700::1111]:8443"


def test_an_internationalised_name_is_fetched_by_its_ascii_form(captured):
    client = client_for(allow_private=False, resolver=answering("93.184.216.34"))

    error = refused(client, "https://bücher.example/x")

    assert error.kind == "unreachable"
    (request,) = captured
    assert request.headers["host"] == "xn--bcher-kva.example"
    assert request.extensions["sni_hostname"] == "xn--bcher-kva.example"


def test_a_callers_host_header_never_replaces_the_name(captured):
    client = client_for(allow_private=False, resolver=answering("93.184.216.34"))

    refused(client, f"https://{NAME}/x", headers={"host": "evil.example"})

    (request,) = captured
    assert request.headers.get_list("host") == [NAME]


def test_a_zero_deadline_is_a_deadline(no_connection):
    async def slow(host: str, port: int) -> list[str]:
        await asyncio.sleep(0.2)
        return ["93.184.216.34"]

    assert refused(client_for(resolver=slow), f"https://{NAME}/x", deadline_seconds=0).kind == (
        "timeout"
    )


# --- resolution failures -------------------------------------------------------------------


def test_a_name_that_does_not_resolve_is_unresolvable(no_connection):
    async def failing(host: str, port: int) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    assert refused(client_for(resolver=failing), f"https://{NAME}/x").kind == "unresolvable"
    assert refused(client_for(resolver=answering()), f"https://{NAME}/x").kind == "unresolvable"


def test_a_closed_port_is_unreachable():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = client_for(resolve={NAME: ("127.0.0.1", port)})
    assert refused(client, f"https://{NAME}/x").kind == "unreachable"


# --- environment ---------------------------------------------------------------------------


def test_proxies_from_the_environment_are_ignored(server, monkeypatch):
    for variable in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "HTTP_PROXY"):
        monkeypatch.setenv(variable, "http://127.0.0.1:1")
    for variable in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(variable, raising=False)
    server.answer("/x", Answer(200, b"direct"))

    response = fetch(client_for(server), f"https://{NAME}/x")

    assert (response.status_code, response.body) == (200, b"direct")
    assert server.paths_seen() == ["/x"]


# --- configuration -------------------------------------------------------------------------


def test_parse_resolve_reads_host_address_port_lists():
    spec = "a.dev=127.0.0.1:8443, b.dev=::1, c.dev=[::1]:9443, D.dev.=10.0.0.1, e.dev=[::2]"
    assert parse_resolve(spec) == {
        "a.dev": ("127.0.0.1", 8443),
        "b.dev": ("::1", None),
        "c.dev": ("::1", 9443),
        "d.dev": ("10.0.0.1", None),
        "e.dev": ("::2", None),
    }
    assert parse_resolve("") == {}
    assert parse_resolve(" , ") == {}


@pytest.mark.parametrize(
    "spec",
    [
        "a.dev",
        "a.dev=",
        "=127.0.0.1",
        "a.dev=notanip",
        "a.dev=127.0.0.1:0",
        "a.dev=127.0.0.1:65536",
        "a.dev=127.0.0.1:http",
        "a.dev=[::1]:0",
        "a.dev=[::1]x",
        "a.dev=127.0.0.1, b.dev",
    ],
)
def test_parse_resolve_refuses_malformed_entries(spec):
    with pytest.raises(ValueError):
        parse_resolve(spec)


def test_settings_validate_outbound_resolve():
    with pytest.raises(ValidationError, match="BROKER_OUTBOUND_RESOLVE"):
        Settings(outbound_resolve="bad")
    assert Settings(outbound_resolve="a.dev=127.0.0.1:8443").outbound_resolve


def test_a_policy_is_built_from_settings(tmp_path):
    settings = Settings(
        allow_private_fetch=True,
        outbound_ca_bundle=str(tmp_path / "ca.pem"),
        outbound_resolve="Agents.dev=127.0.0.1:8443",
    )
    policy = OutboundPolicy.from_settings(settings)
    assert policy.allow_private is True
    assert policy.ca_bundle == str(tmp_path / "ca.pem")
    assert policy.resolve == {"agents.dev": ("127.0.0.1", 8443)}

    default = OutboundPolicy.from_settings(Settings())
    assert (default.allow_private, default.resolve, default.ca_bundle) == (False, {}, None)


def _production(**overrides: Any) -> Settings:
    return Settings(
        env="production",
        key_hash_secret=STRONG,
        signing_key="ab" * 32,
        card_signing_key="cd" * 32,
        database_url="postgresql+psycopg://db/b",
        **overrides,
    )


@pytest.mark.parametrize(
    ("overrides", "variable"),
    [
        ({"allow_private_fetch": True}, "BROKER_ALLOW_PRIVATE_FETCH"),
        ({"outbound_resolve": "a.dev=127.0.0.1"}, "BROKER_OUTBOUND_RESOLVE"),
    ],
)
def test_production_refuses_outbound_testing_settings(overrides, variable):
    assert _production()  # the base is a valid production configuration
    with pytest.raises(ValidationError, match=variable):
        _production(**overrides)


def test_production_takes_an_extra_ca_bundle():
    # The operator's own hosts may sit behind a private CA (docs/operators/configuration.md).
    assert _production(outbound_ca_bundle="/etc/ssl/private-ca.pem").outbound_ca_bundle
