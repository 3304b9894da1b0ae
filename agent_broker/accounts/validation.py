"""Rules for what an account may declare as its contact and deal route."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from email_validator import EmailNotValidError, validate_email

from agent_broker.problems import InvalidInput

# Names that can never receive mail (RFC 2606, 6761, 6762, 7686, 8375, 9476 and the
# ICANN-reserved .internal), plus the example second-level domains of RFC 2606.
RESERVED_SUFFIXES = (
    "invalid",
    "test",
    "example",
    "localhost",
    "local",
    "onion",
    "alt",
    "internal",
    "home.arpa",
    "example.com",
    "example.net",
    "example.org",
)
MAX_URL_LENGTH = 2048


def contact_email(value: str) -> str:
    email = value.strip()
    if not email:
        raise InvalidInput("contact_email is required.")
    if len(email) > 254:
        raise InvalidInput("contact_email must be at most 254 characters.")
    if "@" not in email:
        raise InvalidInput("contact_email must be an email address.")
    domain = email.rsplit("@", 1)[1].lower().rstrip(".")
    if domain.startswith("[") or _is_ip(domain):
        raise InvalidInput("contact_email must use a domain name, not an IP address literal.")
    if "." not in domain:
        raise InvalidInput("contact_email must use a fully qualified domain, not a single label.")
    for suffix in RESERVED_SUFFIXES:
        if domain == suffix or domain.endswith("." + suffix):
            raise InvalidInput(
                f"contact_email uses the reserved name .{suffix}, which cannot receive mail."
            )
    try:
        checked = validate_email(email, check_deliverability=False)
    except EmailNotValidError as exc:
        raise InvalidInput(f"contact_email is not a deliverable address: {exc}") from None
    return checked.normalized


def contact_name(value: str) -> str:
    name = value.strip()
    if not name:
        raise InvalidInput("contact_name is required.")
    if len(name) > 200:
        raise InvalidInput("contact_name must be at most 200 characters.")
    return name


def https_url(value: str, field: str, *, allow_query: bool = True) -> str:
    """An absolute https URL with a host and no credentials in it."""
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
        raise InvalidInput(f"{field} must be an https URL.")
    if not parts.hostname:
        raise InvalidInput(f"{field} must name a host.")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(f"{field} must not carry credentials.")
    if port == 0:
        raise InvalidInput(f"{field} has an invalid port.")
    if not allow_query and (parts.query or parts.fragment):
        raise InvalidInput(f"{field} must not carry a query or fragment.")
    return url


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
