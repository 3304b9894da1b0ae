"""Fold look-alike and invisible characters before scanning, keeping offsets mappable.

Zero-width characters ("ig\u200bnore previous instructions"), compatibility forms
(full-width "＠", mathematical letters), Latin look-alikes from Cyrillic and Greek, digits
of other scripts ("+٤٤ ٧٧٠٠ ...") and ideographic full stops between ASCII labels
("acme。io") would slip past ASCII patterns. Only non-ASCII characters are touched, so plain
ASCII bodies (the common case) are scanned as they are.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass

# Characters that render as nothing; NFKC keeps them, so they are dropped explicitly. Every
# format character (category Cf: zero-width spaces and joiners, soft hyphen, bidi controls,
# tag characters) plus the fillers and variation selectors of other categories. The few Cf
# characters that do render (Arabic number signs) carry nothing the ASCII patterns read.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
    (0xE0100, 0xE01EF),
)
INVISIBLE = frozenset(chr(c) for lo, hi in _INVISIBLE_RANGES for c in range(lo, hi + 1))
_HAS_INVISIBLE = re.compile(
    "[" + "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in _INVISIBLE_RANGES) + "]"
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]")

# One-to-one swaps, so every offset stays in place. Cyrillic and Greek letters drawn like
# Latin ones ("Іgnore", "аpi") and curly quotes ("you’re"), which NFKC leaves alone; and
# every decimal digit of another script ("٤", "४", "０") as its ASCII digit, so phone
# numbers and addresses written in them meet the same patterns.
_ONE_TO_ONE = str.maketrans(
    "аеорсухѕіјԁԛԝӏһАВЕКМНОРСТХУІЈЅԚԜοαρικνυτΑΒΕΖΗΙΚΜΝΟΡΤΥΧ\u2018\u2019\u201c\u201d",
    "aeopcyxsijdqwlhABEKMHOPCTXYIJSQWoapikvutABEZHIKMNOPTYX''\"\"",
) | {
    c: ord("0") + unicodedata.decimal(chr(c))
    # Unicode has decimal digits in the first two planes only.
    for c in range(0x80, 0x20000)
    if chr(c).isdecimal()
}

# NFKC turns "．" (U+FF0E) into ".", but "｡" and "︒" into "。", which it keeps. "。" ends a
# CJK sentence, so it reads as a host-name dot only between two ASCII letters or digits
# ("evil。com"); after a sentence, before a space or before CJK text it stays as it is.
_IDEOGRAPHIC_DOT = re.compile("\u3002(?<=[A-Za-z0-9]\u3002)(?=[A-Za-z0-9])")


@dataclass(frozen=True)
class Folded:
    """Scanned text plus, when it differs from the original, a map back to it."""

    text: str
    # Parallel lists: segment k starts at _out[k] in `text` and at _orig[k] in the original;
    # _verbatim[k] says whether the segment was copied (offsets shift 1:1) or replaced.
    _out: tuple[int, ...] = ()
    _orig: tuple[int, ...] = ()
    _verbatim: tuple[bool, ...] = ()
    # Whether the original held invisible characters (folded to `invisible`).
    had_invisible: bool = False

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        if not self._out:
            return start, end
        return self._map(start), self._map(max(start, end - 1)) + (1 if end > start else 0)

    def _map(self, pos: int) -> int:
        k = max(0, bisect_right(self._out, pos) - 1)
        if self._verbatim[k]:
            return self._orig[k] + (pos - self._out[k])
        return self._orig[k]


def _dots(text: str) -> str:
    return _IDEOGRAPHIC_DOT.sub(".", text) if "\u3002" in text else text


def fold(text: str, *, invisible: str = "") -> Folded:
    """Fold `text`; each invisible character becomes `invisible` (nothing by default, so
    "pre\u200bvious" reads as one word; " " reads "ignore\u2060previous" as two)."""
    if text.isascii():
        return Folded(text)
    text = text.translate(_ONE_TO_ONE)
    if text.isascii():
        return Folded(text)
    has_invisible = _HAS_INVISIBLE.search(text) is not None
    if not has_invisible and unicodedata.is_normalized("NFKC", text):
        return Folded(_dots(text))
    parts: list[str] = []
    out: list[int] = []
    orig: list[int] = []
    verbatim: list[bool] = []
    written = 0
    copied_to = 0
    for match in _NON_ASCII.finditer(text):
        i = match.start()
        if i > copied_to:
            out.append(written)
            orig.append(copied_to)
            verbatim.append(True)
            parts.append(text[copied_to:i])
            written += i - copied_to
        char = text[i]
        replacement = invisible if char in INVISIBLE else unicodedata.normalize("NFKC", char)
        if replacement:
            out.append(written)
            orig.append(i)
            verbatim.append(replacement == char)
            parts.append(replacement)
            written += len(replacement)
        copied_to = i + 1
    if copied_to < len(text):
        out.append(written)
        orig.append(copied_to)
        verbatim.append(True)
        parts.append(text[copied_to:])
    # Same-length swap, so the offset map above still holds.
    folded = _dots("".join(parts))
    return Folded(folded, tuple(out), tuple(orig), tuple(verbatim), has_invisible)
