"""The scanned text in the forms detectors need, and helpers for fast patterns.

Speed rests on one property of Python's `re`: a pattern that begins with a literal is
searched by jumping between occurrences of that literal, while a pattern that begins with
a character class, a look-behind or IGNORECASE is tried at every offset (tens of times
slower). So detectors run on a lower-cased copy without IGNORECASE, and every pattern
starts with a literal word or symbol.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cached_property
from typing import TypeVar, cast

Span = tuple[int, int]
T = TypeVar("T")

_DIGITS_TO_ZERO = str.maketrans("0123456789", "0" * 10)
_NONZERO_DIGIT = re.compile("[1-9]")


class Text:
    """A folded text plus same-length derived copies (offsets agree across all of them)."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        low = raw.lower()
        if len(low) != len(raw):  # e.g. "İ" lower-cases to two characters
            low = "".join(c.lower() if len(c.lower()) == 1 else c for c in raw)
        self.low = low
        self._once: dict[Callable[[Text], object], object] = {}

    def once(self, compute: Callable[[Text], T]) -> T:
        """`compute(self)`, run at most once: one pass can serve two detectors (the
        inner-dot pass finds both bare domains and messaging links)."""
        if compute not in self._once:
            self._once[compute] = compute(self)
        return cast(T, self._once[compute])

    @cached_property
    def shape(self) -> str:
        """Every digit as "0", so digit runs can be found with a literal-led pattern."""
        if self.low.isascii():
            return self.low.translate(_DIGITS_TO_ZERO)
        # `str.translate` takes a slow path on non-ASCII text (six times slower here).
        return _NONZERO_DIGIT.sub("0", self.low)

    @cached_property
    def reversed(self) -> str:
        """For matching backwards from a position with a forward pattern."""
        return self.low[::-1]

    @cached_property
    def at_signs(self) -> tuple[int, ...]:
        return tuple(occurrences(self.low, "@"))


def occurrences(text: str, literal: str) -> list[int]:
    found = []
    i = text.find(literal)
    while i != -1:
        found.append(i)
        i = text.find(literal, i + 1)
    return found


class Anchored:
    """A pattern that begins with `literal`. `str.find` skips text faster still than `re`'s
    literal-prefix search, so it locates the first occurrence (or proves there is none)
    before the regex takes over from there."""

    __slots__ = ("literal", "pattern")

    def __init__(self, literal: str, pattern: str) -> None:
        self.literal = literal
        self.pattern = re.compile(pattern)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        i = text.find(self.literal)
        return self.pattern.finditer(text, i) if i >= 0 else iter(())

    def search(self, text: str) -> re.Match[str] | None:
        i = text.find(self.literal)
        return self.pattern.search(text, i) if i >= 0 else None


def word(literal: str, rest: str = "") -> Anchored:
    """`literal` at a word start, then `rest`. The look-behind sits after the literal so
    that the literal still leads the pattern."""
    esc = re.escape(literal)
    return Anchored(literal, rf"{esc}(?<!\w{esc}){rest}")


def before(text: str, pattern: re.Pattern[str], end: int, reach: int = 60) -> bool:
    """Whether `pattern` (anchored with `$`) matches the text just before `end`."""
    return pattern.search(text, max(0, end - reach), end) is not None


def line_prefix(text: str, pos: int) -> str:
    return text[text.rfind("\n", 0, pos) + 1 : pos]


def windows(points: list[int], back: int, ahead: int) -> list[Span]:
    """Search windows around sorted anchor points, overlapping ones merged, so that many
    anchors close together ("[at][at][at]...") cost one linear search, not one each."""
    merged: list[Span] = []
    for point in points:
        lo, hi = max(0, point - back), point + ahead
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], hi)
        else:
            merged.append((lo, hi))
    return merged


def earliest(*spans: Span | None) -> Span | None:
    found = [s for s in spans if s is not None]
    return min(found) if found else None
