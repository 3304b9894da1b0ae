"""The canonical https origin a reputation proof is bound to (docs/interface.md §13.2), shared by
the service, which signs it, and verifiers, which compare their own origin with it."""

from __future__ import annotations

import re

import idna

# canonical_origin(): explicit ASCII classes throughout (never \d, which matches any digit).
_ORIGIN = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://(?P<authority>[^/?#]*)(?P<rest>.*)", re.S
)
_ORIGIN_PORT = re.compile(r"[1-9][0-9]{0,4}")
_HOST_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
# WHATWG URL parsers read a host whose last label is a number as IPv4 ("127.1", "0x7f").
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")


class InvalidOrigin(ValueError):
    """Text that is not an https origin in the shape a reputation proof accepts."""


def canonical_origin(text: object) -> str:
    """The canonical form of the https origin a reputation proof is bound to (docs/interface.md
    §13.2): `https://host` or `https://host:port`, lower-case, the host in ASCII (IDNA A-labels for
    internationalised names: a host written in Unicode is refused, not converted), default port 443
    dropped, no trailing slash.

    Accepted input: scheme `https` in any case; a host name; optionally `:` and a plain
    decimal port 1-65535 without sign or leading zero; optionally one trailing `/`, which is
    dropped. Refused (InvalidOrigin): any other scheme, user information, a path, a query
    or a fragment (even empty), surrounding whitespace, IP literals and hosts an URL parser
    would read as an IPv4 address (last label numeric), empty labels (so no trailing dot),
    labels that are not letters, digits and inner hyphens once converted, and xn-- labels
    that are not valid Punycode in their own canonical spelling.

    The service canonicalises the audience it signs, and a verifier its own configured
    origin, with this one function, so both sides compare the same string."""
    if not isinstance(text, str):
        raise InvalidOrigin("an origin must be a string")
    match = _ORIGIN.fullmatch(text)
    if match is None:
        raise InvalidOrigin("an origin has the form https://host or https://host:port")
    if match["scheme"].lower() != "https":
        raise InvalidOrigin("only https origins are accepted")
    if match["rest"] not in ("", "/"):
        raise InvalidOrigin("an origin has no path, query or fragment")
    authority = match["authority"]
    if "@" in authority:
        raise InvalidOrigin("an origin carries no user information")
    if "[" in authority or "]" in authority:
        raise InvalidOrigin("IP address literals are not accepted; use a host name")
    host, has_port, port_text = authority.partition(":")
    host = _canonical_host(host)
    if not has_port:
        return f"https://{host}"
    if not _ORIGIN_PORT.fullmatch(port_text) or int(port_text) > 65535:
        raise InvalidOrigin("the port must be a plain decimal number from 1 to 65535")
    port = int(port_text)
    return f"https://{host}" if port == 443 else f"https://{host}:{port}"


def _canonical_host(host: str) -> str:
    if not host:
        raise InvalidOrigin("an origin needs a host")
    if not host.isascii():
        # docs/interface.md §13.2: the audience is written in ASCII; the sender converts an
        # internationalised name to its xn-- form, so both sides sign the same text.
        raise InvalidOrigin(
            "the host must be ASCII; write an internationalised name in its xn-- form"
        )
    mapped = host.lower()
    labels = []
    for label in mapped.split("."):
        if not _HOST_LABEL.fullmatch(label):
            raise InvalidOrigin(
                "each host label is 1-63 letters, digits or inner hyphens (no empty label)"
            )
        if label.startswith("xn--") and not _is_canonical_a_label(label):
            raise InvalidOrigin(f"{label!r} is not a valid IDNA A-label")
        labels.append(label)
    if _NUMERIC_LABEL.fullmatch(labels[-1]):
        raise InvalidOrigin("IP addresses are not accepted; use a host name")
    ascii_host = ".".join(labels)
    if len(ascii_host) > 253:
        raise InvalidOrigin("the host name is longer than 253 characters")
    return ascii_host


def _is_canonical_a_label(label: str) -> bool:
    try:
        return idna.alabel(idna.ulabel(label)).decode("ascii") == label
    except (idna.IDNAError, UnicodeError):
        return False
