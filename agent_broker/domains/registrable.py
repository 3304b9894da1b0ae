"""The registrable domain (eTLD+1) of a deal route, from the Public Suffix List bundled with
`publicsuffixlist` (no network at run time).

Only the list's ICANN section counts. A name under a hosting platform's shared suffix
(`you.github.io`, `x.trycloudflare.com`) belongs, as far as registration goes, to the
platform: its registrable domain is the platform's own, whose apex the user cannot
serve a file from. So a tunnel or a free subdomain can never earn a welcome credit of its
own, one per name (docs/decisions/domain-proof.md)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import idna
from publicsuffixlist import PublicSuffixList

_PSL = PublicSuffixList(only_icann=True)


class NoRegistrableDomain(ValueError):
    """The route's host has no registrable domain; the message says why."""


def registrable_domain(route: str) -> str:
    """The eTLD+1 of the route's host, lower-case, in its ASCII (A-label) form."""
    host = (urlsplit(route).hostname or "").rstrip(".")
    if not host:
        raise NoRegistrableDomain("the deal_route names no host")
    if _is_ip_literal(host):
        raise NoRegistrableDomain(
            f"the deal_route host {host} is an IP address, which has no registrable domain"
        )
    try:
        ascii_host = idna.encode(host, uts46=True).decode("ascii").lower()
    except idna.IDNAError:
        raise NoRegistrableDomain(
            f"the deal_route host {host} is not a valid domain name"
        ) from None
    domain = _PSL.privatesuffix(ascii_host)
    if domain is None:
        raise NoRegistrableDomain(
            f"the deal_route host {ascii_host} is itself a public suffix (or a single label), "
            "so it has no registrable domain"
        )
    return domain


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
