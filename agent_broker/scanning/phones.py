"""Phone numbers: a cheap pattern finds digit runs, `phonenumbers` decides on the few left.

A `phonenumbers` parse costs up to a tenth of a millisecond, so it only sees runs holding
at least seven digits, and national ones only once they have the North American shape.
International numbers (+, 00 or 011 prefix) are checked for every country; numbers without
a prefix are checked as North American only, because a bare national number elsewhere
("030 901820") cannot be told apart from prices and IDs.
"""

from __future__ import annotations

import re

import phonenumbers
from phonenumbers import NumberParseException

from agent_broker.scanning.text import Span, Text

# On Text.shape every digit is "0", so this literal-led pattern finds digit runs that may
# contain spaces, dots, dashes and parentheses. Bounded, so backtracking stays linear.
_RUN = re.compile(r"0[0().\- \t\u00a0]{5,32}0(?!\w)")
# A run continuing a token ("ORD-2026-000123", "#12345678", "1,250,000", "v2.10.3") is
# not a number on its own.
_GLUED = frozenset("_#.,/-+")

_MAX_GROUPS = 12  # "4 1 5 5 5 5 2 6 7 1" has ten; more is a table row
_MIN_DIGITS, _MAX_DIGITS = 7, 15
_GROUP = re.compile(r"\d+")
# Dates parse as valid numbers ("2026-11-22 14" is 202-611-2214), so a window holding one
# is never a phone number.
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}")
_INTERNATIONAL_PREFIX = re.compile(r"\+|00(?=[1-9])|011(?=[1-9])")


def find_phone(t: Text) -> Span | None:
    shape = t.shape
    for m in _RUN.finditer(shape):
        start = m.start()
        if start and shape[start - 1] == "(":
            start -= 1
        if start and shape[start - 1] == "+":
            start -= 1
        if start and (shape[start - 1].isalnum() or shape[start - 1] in _GLUED):
            continue
        if shape.count("0", m.start(), m.end()) < _MIN_DIGITS:
            continue
        span = phone_span(t.raw[start : m.end()])
        if span is not None:
            return start + span[0], start + span[1]
    return None


def phone_span(candidate: str) -> Span | None:
    """Span of the first valid number inside a candidate, trying runs of digit groups so
    that "+1 415 555 2671 24" (a number followed by unrelated digits) is still found."""
    groups = [(m.start(), m.end()) for m in _GROUP.finditer(candidate)][:_MAX_GROUPS]
    if sum(end - start for start, end in groups) < _MIN_DIGITS:
        return None
    international = _INTERNATIONAL_PREFIX.match(candidate.lstrip("( ")) is not None
    for i, (first_start, _) in enumerate(groups):
        digits = 0
        for last_start, last_end in groups[i:]:
            digits += last_end - last_start
            if digits > _MAX_DIGITS:
                break
            if digits < _MIN_DIGITS:
                continue
            start = 0 if i == 0 else first_start
            window = candidate[start:last_end]
            if _DATE.search(window):
                continue
            if _is_valid(window, international=international and i == 0):
                return start, last_end
    return None


# North American numbers: area code and exchange never start with 0 or 1. Checking this
# first spares a `phonenumbers` parse for most digit runs ("1 250 000").
_NANP = re.compile(r"1?[2-9]\d\d[2-9]\d{6}")


def _is_valid(window: str, *, international: bool) -> bool:
    if not international and not _NANP.fullmatch("".join(c for c in window if c.isdigit())):
        return False
    if international:
        window = "+" + _INTERNATIONAL_PREFIX.sub("", window.lstrip("( "), count=1)
    try:
        number = phonenumbers.parse(window, None if international else "US")
    except NumberParseException:
        return False
    return phonenumbers.is_valid_number(number)


def phone_at(t: Text, pos: int) -> int | None:
    """End of a valid number starting exactly at `pos` ("WhatsApp me at +1 415 ...")."""
    digits_from = pos + 1 if t.shape.startswith(("+", "("), pos) else pos
    m = _RUN.match(t.shape, digits_from)
    if m is None:
        return None
    span = phone_span(t.raw[pos : m.end()])
    return pos + span[1] if span is not None and span[0] == 0 else None
