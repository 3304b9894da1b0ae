"""Phone numbers: a cheap pattern finds digit runs, `phonenumbers` decides on the few left.

A `phonenumbers` parse costs up to a tenth of a millisecond, so it only sees runs holding
at least seven digits, and national ones only once they have the North American shape.
International numbers (+, 00 or 011 prefix) are checked for every country; numbers without
a prefix are checked as North American only, because a bare national number elsewhere
("030 901820") cannot be told apart from prices and IDs.

An international number next to a calling or messaging word ("WhatsApp me at +44 7700
900123") needs only a length that fits its country code (`is_possible_number`): whether its
range is allocated yet does not change that it is offered as a way to reach someone.
"""

from __future__ import annotations

import re

import phonenumbers
from phonenumbers import NumberParseException, ValidationResult

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

# Words that offer a number to call or message, on Text.low. They only lower the bar for an
# international number, so ordinary uses ("call the API 3 times", "plain text") change
# nothing: the number must still start with + or 00 and have a length its country allows.
_CONTACT_WORD = re.compile(
    r"(?<![a-z])(?:whats\s?app|signal|telegram|viber|wechat|skype|imessage|facetime|threema"
    r"|call(?:s|ed|ing)?|phone[ds]?|telephone|tel|mobile|mob|cell(?:phone)?|sms|mms"
    r"|text(?:s|ed|ing)?|txt|ring|dial(?:s|l?ed|l?ing)?|fax|hotline|helpline|message|msg"
    r"|ping|contact(?:ed|ing)?|reach)(?![a-z])"
    "|[\u260e\u2706\U0001f4de\U0001f4f1\U0001f4f2]"  # telephone and mobile-phone symbols
    # The same words in Chinese, Japanese, Korean and Thai (phone, call, mobile, SMS, fax,
    # hotline, contact, WeChat, KakaoTalk, LINE in Thai only: in kana and Hangul it is also
    # the word "line"); these scripts need no word boundary.
    "|电话|電話|致电|致電|来电|來電|拨打|撥打|手机|手機|短信|簡訊|传真|傳真|热线|熱線"
    "|联系|聯繫|联络|聯絡|微信|携帯|連絡|問い?合わ?せ"
    "|전화|연락|휴대폰|핸드폰|문자|팩스|카톡|카카오톡"
    "|โทร|ติดต่อ|มือถือ|แฟกซ์|ไลน์"
)
# How far from a number such a word may stand: "WhatsApp or Signal (fastest): +44 ...".
_WORD_BEFORE, _WORD_AFTER = 40, 24
_LETTERS_BEFORE = re.compile(r"[a-z]+$")


def _near_contact_word(low: str, start: int, end: int) -> bool:
    hi = end + _WORD_AFTER
    m = _CONTACT_WORD.search(low, max(0, start - _WORD_BEFORE), hi + 16)
    return m is not None and m.start() < hi


def _glued_to_contact_word(low: str, start: int) -> bool:
    """ "Call+1 415 ...", "tel0044 ...": a calling word glued to the number does not make
    the number part of a longer token."""
    m = _LETTERS_BEFORE.search(low, max(0, start - 16), start)
    if m is None or (m.start() and low[m.start() - 1].isalnum()):
        return False
    return _CONTACT_WORD.fullmatch(m.group()) is not None


def _international(candidate: str) -> bool:
    return _INTERNATIONAL_PREFIX.match(candidate.lstrip("( ")) is not None


def find_phone(t: Text) -> Span | None:
    shape = t.shape
    for m in _RUN.finditer(shape):
        start = m.start()
        if start and shape[start - 1] == "(":
            start -= 1
        if start and shape[start - 1] == "+":
            start -= 1
        glued = start and (shape[start - 1].isalnum() or shape[start - 1] in _GLUED)
        if glued and not _glued_to_contact_word(t.low, start):
            continue
        if shape.count("0", m.start(), m.end()) < _MIN_DIGITS:
            continue
        candidate = t.raw[start : m.end()]
        possible = _international(candidate) and _near_contact_word(t.low, start, m.end())
        span = phone_span(candidate, possible=possible)
        if span is not None:
            return start + span[0], start + span[1]
    return None


def phone_span(candidate: str, *, possible: bool = False) -> Span | None:
    """Span of the first valid number inside a candidate, trying runs of digit groups so
    that "+1 415 555 2671 24" (a number followed by unrelated digits) is still found.
    With `possible`, failing a valid one, the first international number of a possible
    length (each window is parsed once either way)."""
    groups = [(m.start(), m.end()) for m in _GROUP.finditer(candidate)][:_MAX_GROUPS]
    if sum(end - start for start, end in groups) < _MIN_DIGITS:
        return None
    international = _international(candidate)
    fallback: Span | None = None
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
            verdict = _judge(window, international=international and i == 0, possible=possible)
            if verdict == _VALID:
                return start, last_end
            if verdict == _POSSIBLE and fallback is None:
                fallback = start, last_end
    return fallback


# North American numbers: area code and exchange never start with 0 or 1. Checking this
# first spares a `phonenumbers` parse for most digit runs ("1 250 000").
_NANP = re.compile(r"1?[2-9]\d\d[2-9]\d{6}")


# Verdicts of `_judge`.
_VALID, _POSSIBLE = "valid", "possible"


def _judge(window: str, *, international: bool, possible: bool) -> str | None:
    """_VALID, _POSSIBLE (asked for with `possible`, international windows only) or None."""
    if not international and not _NANP.fullmatch("".join(c for c in window if c.isdigit())):
        return None
    if international:
        window = "+" + _INTERNATIONAL_PREFIX.sub("", window.lstrip("( "), count=1)
    try:
        number = phonenumbers.parse(window, None if international else "US")
    except NumberParseException:
        return None
    if phonenumbers.is_valid_number(number):
        return _VALID
    # IS_POSSIBLE only: a "local only" length (seven digits after +1) cannot be dialled
    # from abroad, so "+12 345 678" stays a quantity.
    if possible and international:
        reason = phonenumbers.is_possible_number_with_reason(number)
        return _POSSIBLE if reason == ValidationResult.IS_POSSIBLE else None
    return None


def phone_at(t: Text, pos: int) -> int | None:
    """End of a number starting exactly at `pos`, right after a messaging platform's name
    ("WhatsApp me at +1 415 ..."); an international one need only be possible there."""
    digits_from = pos + 1 if t.shape.startswith(("+", "("), pos) else pos
    m = _RUN.match(t.shape, digits_from)
    if m is None:
        return None
    span = phone_span(t.raw[pos : m.end()], possible=True)
    return pos + span[1] if span is not None and span[0] == 0 else None
