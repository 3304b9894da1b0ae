"""Scan free text (listing titles and bodies, offer diffs) for contact details and prompt
injection, and refuse it with a problem that names the field and rule, never the match."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from agent_broker.scanning import contact, injection, phones
from agent_broker.scanning.errors import ContactLeak, PromptInjection
from agent_broker.scanning.finding import Finding, Kind
from agent_broker.scanning.normalize import fold
from agent_broker.scanning.text import Span, Text

__all__ = ["Finding", "scan", "ensure_clean", "RULE_LABELS"]

Detector = Callable[[Text], Span | None]

# Within a kind the earliest hit wins; on a tie the rule listed first wins, so
# "https://t.me/x" is a messaging_link rather than a url, and "WhatsApp me at +1 ..." a
# messaging_handle rather than a phone.
CONTACT_RULES: tuple[tuple[str, Detector], ...] = (
    ("messaging_link", contact.find_messaging_link),
    ("email", contact.find_email),
    ("url", contact.find_url),
    ("obfuscated_email", contact.find_obfuscated_email),
    ("messaging_handle", contact.find_messaging_mention),
    ("ip_address", contact.find_ip),
    ("phone", phones.find_phone),
    ("domain", contact.find_domain),
    ("messaging_handle", contact.find_handle),
)
INJECTION_RULES: tuple[tuple[str, Detector], ...] = (
    ("role_marker", injection.find_role_marker),
    ("instruction_override", injection.find_override),
    ("persona_override", injection.find_persona),
    ("jailbreak", injection.find_jailbreak),
    ("secret_exfiltration", injection.find_exfiltration),
    ("tool_call", injection.find_tool_call),
)

RULE_LABELS: Mapping[str, str] = {
    "email": "email address",
    "obfuscated_email": "obfuscated email address",
    "phone": "phone number",
    "url": "URL",
    "domain": "domain name",
    "ip_address": "IP address",
    "messaging_handle": "messaging handle",
    "messaging_link": "messaging link",
    "instruction_override": "instruction override",
    "role_marker": "chat role or system-prompt marker",
    "persona_override": "persona override",
    "tool_call": "tool-call instruction",
    "jailbreak": "jailbreak phrasing",
    "secret_exfiltration": "request to reveal secrets",
}


def _first(text: Text, kind: Kind, rules: tuple[tuple[str, Detector], ...]) -> Finding | None:
    best: Finding | None = None
    for rule, detect in rules:
        span = detect(text)
        if span is not None and (best is None or span[0] < best.start):
            best = Finding(kind, rule, span[0], span[1])
    return best


def scan(text: str) -> Finding | None:
    """First finding in `text`, or None. Contact rules take precedence over injection
    rules; offsets refer to `text` even when invisible characters were folded away."""
    folded = fold(text)
    prepared = Text(folded.text)
    found = _first(prepared, "contact_leak", CONTACT_RULES) or _first(
        prepared, "prompt_injection", INJECTION_RULES
    )
    if found is None and folded.had_invisible:
        # An invisible character may stand where a space would ("ignore\u2060previous
        # instructions"), so phrases are read once more with each one as a space. Contact
        # details are read joined only: an address is one token, whatever hides inside it.
        folded = fold(text, invisible=" ")
        found = _first(Text(folded.text), "prompt_injection", INJECTION_RULES)
    if found is None:
        return None
    start, end = folded.original_span(found.start, found.end)
    return Finding(found.kind, found.rule, start, end)


def ensure_clean(fields: Mapping[str, str]) -> None:
    """Scan each named field in order; raise on the first finding.

    The detail names the field and the rule but never echoes the matched text, so a
    refused secret is not copied into responses or logs."""
    for field, text in fields.items():
        found = scan(text)
        if found is None:
            continue
        label = RULE_LABELS[found.rule]
        if found.kind == "contact_leak":
            raise ContactLeak(
                f"{field} contains contact details ({label}); remove them — contact is "
                "revealed only after a deal seals."
            )
        raise PromptInjection(
            f"{field} contains text aimed at the agents that read it ({label}); remove it "
            "— listings and offers must not instruct their readers."
        )
