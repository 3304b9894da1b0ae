"""Rules for URLs a user declares for others to call or fetch: a deal route, an agent
card, a contact URL, an event webhook. Checked as they are declared, before anything is
fetched (the guarded client, agent_broker.http.outbound, checks again at fetch time)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import SplitResult, urlsplit

import idna

from agent_broker.problems import InvalidInput

MAX_URL_LENGTH = 2048


def https_url(value: str, field: str, *, allow_query: bool = True) -> str:
    """An absolute https URL with a host and no credentials in it."""
    return _split_https_url(value, field, allow_query=allow_query)[0]


def public_https_url(value: str, field: str, *, document: bool = False) -> str:
    """An https URL a client may fetch or the service may call: the rules of https_url
    without a query or fragment, a host named by a public-looking domain name (never
    localhost, never an IP address in any form a URL parser reads as one) and, for a
    `document` (an agent card), a path naming the document itself rather than a folder."""
    url, parts = _split_https_url(value, field, allow_query=False)
    _refuse_non_public_host(parts, field)
    if document and (not parts.path or parts.path.endswith("/")):
        raise InvalidInput(
            f"{field} must name the document itself, not a folder: its path must not be "
            "empty or end with a slash."
        )
    return url


def _split_https_url(value: str, field: str, *, allow_query: bool) -> tuple[str, SplitResult]:
    """The URL as sent (less surrounding whitespace) and its parts, once it passed."""
    url = value.strip()
    if len(url) > MAX_URL_LENGTH:
        raise InvalidInput(f"{field} must be at most {MAX_URL_LENGTH} characters.")
    if any(ch.isspace() for ch in url):
        raise InvalidInput(f"{field} must not contain whitespace.")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise InvalidInput(f"{field} is not a valid URL.") from None
    if parts.scheme.lower() != "https":
        if parts.scheme and parts.netloc:
            raise InvalidInput(f"{field} must use https, not {parts.scheme}.")
        raise InvalidInput(f"{field} must be an absolute https URL.")
    if not parts.hostname:
        raise InvalidInput(f"{field} must name a host.")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(f"{field} must not carry credentials (user:password@).")
    if port == 0:
        raise InvalidInput(f"{field} has an invalid port.")
    # Any "?" or "#" counts, even with nothing after it: appending to the URL, or
    # comparing it, must not depend on an empty query or fragment.
    if not allow_query and "?" in url:
        raise InvalidInput(f"{field} must not carry a query (the part from '?').")
    if not allow_query and "#" in url:
        raise InvalidInput(f"{field} must not carry a fragment (the part from '#').")
    return url, parts


# WHATWG URL parsing (browsers, most HTTP clients) and inet_aton (the system resolver)
# read a host whose last label is a decimal or 0x-hex number as an IPv4 address:
# 2130706433, 0x7f.1, 127.1 and 0177.0.0.1 are all 127.0.0.1.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")


def _refuse_non_public_host(parts: SplitResult, field: str) -> None:
    host = parts.hostname or ""
    bracketed = parts.netloc.rpartition("@")[2].startswith("[")
    if bracketed or is_ip(host):
        raise InvalidInput(f"{field} must name its host by a domain name, not an IP address.")
    try:
        # The mapping a client applies before resolving (full-width letters and digits
        # fold to ASCII), so what is checked is the name that would be looked up.
        name = idna.encode(host, uts46=True).decode("ascii").lower()
    except idna.IDNAError:
        raise InvalidInput(f"{field} host {host!r} is not a valid domain name.") from None
    name = name.removesuffix(".")
    if _NUMERIC_LABEL.fullmatch(name.rsplit(".", 1)[-1]):
        raise InvalidInput(
            f"{field} must name its host by a domain name, not an IP address: {host!r} "
            "ends in a number, which URL parsers read as an IPv4 address."
        )
    if name == "localhost" or name.endswith(".localhost"):
        raise InvalidInput(f"{field} must not point at localhost ({host!r}).")


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
