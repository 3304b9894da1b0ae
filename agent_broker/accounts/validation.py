"""Rules for what an account may declare as its contact. The URL rules (deal route, agent
card, contact URL, event webhook) are in agent_broker.http.urls."""

from __future__ import annotations

from email_validator import EmailNotValidError, validate_email

from agent_broker.http import urls
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


def contact_email(value: str) -> str:
    email = value.strip()
    if not email:
        raise InvalidInput("contact_email is required.")
    if len(email) > 254:
        raise InvalidInput("contact_email must be at most 254 characters.")
    if "@" not in email:
        raise InvalidInput("contact_email must be an email address.")
    domain = email.rsplit("@", 1)[1].lower().rstrip(".")
    if domain.startswith("[") or urls.is_ip(domain):
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
