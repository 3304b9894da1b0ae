"""Fold look-alike and invisible characters before scanning, keeping offsets mappable.

Zero-width characters ("ig\u200bnore previous instructions"), compatibility forms
(full-width "＠", mathematical letters) and Latin look-alikes from Cyrillic and Greek would
slip past ASCII patterns. Only non-ASCII characters are touched, so plain ASCII bodies (the
common case) are scanned as they are.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass

# Format characters that render as nothing; NFKC keeps them, so they are dropped explicitly.
_INVISIBLE = frozenset(
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b\u200c\u200d\u200e\u200f"
    "\u202a\u202b\u202c\u202d\u202e\u2060\u2061\u2062\u2063\u2064\u3164\ufeff\uffa0"
) | frozenset(chr(c) for c in range(0xFE00, 0xFE10))
_NON_ASCII = re.compile(r"[^\x00-\x7f]")

# Cyrillic and Greek letters drawn like Latin ones ("Іgnore", "аpi") and curly quotes
# ("you’re"): NFKC leaves them alone. A one-to-one swap keeps every offset in place.
_CONFUSABLES = str.maketrans(
    "аеорсухѕіјԁԛԝӏһАВЕКМНОРСТХУІЈЅԚԜοαρικνυτΑΒΕΖΗΙΚΜΝΟΡΤΥΧ\u2018\u2019\u201c\u201d",
    "aeopcyxsijdqwlhABEKMHOPCTXYIJSQWoapikvutABEZHIKMNOPTYX''\"\"",
)


@dataclass(frozen=True)
class Folded:
    """Scanned text plus, when it differs from the original, a map back to it."""

    text: str
    # Parallel lists: segment k starts at _out[k] in `text` and at _orig[k] in the original;
    # _verbatim[k] says whether the segment was copied (offsets shift 1:1) or replaced.
    _out: tuple[int, ...] = ()
    _orig: tuple[int, ...] = ()
    _verbatim: tuple[bool, ...] = ()

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        if not self._out:
            return start, end
        return self._map(start), self._map(max(start, end - 1)) + (1 if end > start else 0)

    def _map(self, pos: int) -> int:
        k = max(0, bisect_right(self._out, pos) - 1)
        if self._verbatim[k]:
            return self._orig[k] + (pos - self._out[k])
        return self._orig[k]


def fold(text: str) -> Folded:
    if text.isascii():
        return Folded(text)
    text = text.translate(_CONFUSABLES)
    if text.isascii():
        return Folded(text)
    if unicodedata.is_normalized("NFKC", text) and not any(c in _INVISIBLE for c in text):
        return Folded(text)
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
        replacement = "" if char in _INVISIBLE else unicodedata.normalize("NFKC", char)
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
    return Folded("".join(parts), tuple(out), tuple(orig), tuple(verbatim))
