"""Fold look-alike and invisible characters before scanning, keeping offsets mappable.

Zero-width characters ("ig\u200bnore previous instructions"), compatibility forms
(full-width "＠", mathematical letters), Latin look-alikes from Cyrillic and Greek, digits
of other scripts ("+٤٤ ٧٧٠٠ ...") and ideographic full stops between ASCII labels
("acme。io") would slip past ASCII patterns. So would ASCII written straight against CJK,
kana, Hangul or Thai text ("連絡先はbob@acme.ioです"): those scripts put no space between
words, and the patterns' word boundaries read their characters as letters, so a space is
inserted wherever ASCII meets them. Only non-ASCII characters are touched, so plain ASCII
bodies (the common case) are scanned as they are.
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


def _class_ranges(codes: list[int]) -> str:
    """The inside of a regex character class holding exactly `codes`."""
    ranges: list[list[int]] = []
    for c in sorted(codes):
        if ranges and ranges[-1][1] == c - 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    return "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ranges)


# Whether `_ONE_TO_ONE` has anything to swap. `str.translate` looks up every character, so
# skipping it when nothing matches halves the folding time of a CJK body. (Above the BMP
# the class takes everything; see `_FOLDED` below.)
_SWAPPED = re.compile(
    "[" + _class_ranges([c for c in _ONE_TO_ONE if c <= 0xFFFF]) + "\\U00010000-\\U0010ffff]"
)

# Characters the fold replaces: invisible ones, and those NFKC changes when taken alone (it
# changes none beyond the first two planes but the compatibility ideographs at U+2F800).
# Finding just these lets a body in another script be copied in long runs, not character
# by character. `re` tests the BMP part of a class with one table lookup but the rest range
# by range, so the pattern takes every character above the BMP and the set sorts them.
_FOLDED_CHARS = INVISIBLE | frozenset(
    chr(c)
    for c in (*range(0x80, 0x20000), *range(0x2F800, 0x2FA20))
    if unicodedata.normalize("NFKC", chr(c)) != chr(c)
)
_FOLDED = re.compile(
    "["
    + _class_ranges([ord(c) for c in _FOLDED_CHARS if ord(c) <= 0xFFFF])
    + "\\U00010000-\\U0010ffff]"
)


# Scripts written without spaces between words: Thai, Hangul, kana and Han (with their
# radicals, phonetic extensions and compatibility forms). The patterns' word boundaries
# read them as letters, so "連絡先はbob@acme.ioです" would hide its address.
_CJK_LETTER_RANGES = (
    (0x0E00, 0x0E7F),
    (0x1100, 0x11FF),
    (0x2E80, 0x2FDF),
    (0x3040, 0x30FF),
    (0x3100, 0x312F),
    (0x3130, 0x318F),
    (0x31A0, 0x31BF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFFDC),
    (0x1B000, 0x1B2FF),
    (0x20000, 0x323AF),
)
# Their punctuation ("、", "。", "「") and enclosed or vertical forms.
_CJK_MARK_RANGES = (
    (0x3000, 0x303F),
    (0x3200, 0x33FF),
    (0xFE10, 0xFE1F),
    (0xFE30, 0xFE4F),
    (0xFF61, 0xFF65),
)
_CJK_LETTERS = frozenset(chr(c) for lo, hi in _CJK_LETTER_RANGES for c in range(lo, hi + 1))
_CJK = _CJK_LETTERS | frozenset(chr(c) for lo, hi in _CJK_MARK_RANGES for c in range(lo, hi + 1))
_HAS_CJK = re.compile(f"[{_class_ranges([ord(c) for c in _CJK])}]")
_ASCII_RUN = re.compile("[!-~]+")

# NFKC turns "．" (U+FF0E) into ".", but "｡" and "︒" into "。", which it keeps. "。" ends a
# CJK sentence, so it reads as a host-name dot only between two ASCII letters or digits
# ("evil。com"), and only when that dotted run of ASCII does not run straight into CJK
# letters on either side: in "連携先はSlack。AIによる要約" it ends a sentence, and once
# spaces part the scripts it would otherwise make "slack.ai" out of prose.
_IDEOGRAPHIC_DOT = re.compile("\u3002(?<=[A-Za-z0-9]\u3002)(?=[A-Za-z0-9])")
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-\u3002")


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
    """Each "。" between ASCII labels as ".", unless its dotted run touches CJK letters."""
    if "\u3002" not in text:
        return text
    parts: list[str] = []
    copied_to = 0
    run_end, in_prose = -1, False
    for match in _IDEOGRAPHIC_DOT.finditer(text):
        i = match.start()
        if i >= run_end:  # a new run: judged once, so "a。a。a。..." stays linear
            run_start, run_end = i, i + 1
            while run_start and text[run_start - 1] in _HOST_CHARS:
                run_start -= 1
            while run_end < len(text) and text[run_end] in _HOST_CHARS:
                run_end += 1
            in_prose = (run_start > 0 and text[run_start - 1] in _CJK_LETTERS) or (
                run_end < len(text) and text[run_end] in _CJK_LETTERS
            )
        if not in_prose:
            parts += (text[copied_to:i], ".")
            copied_to = i + 1
    return "".join(parts) + text[copied_to:] if parts else text


def _script_breaks(text: str) -> list[int]:
    """Positions where a run of ASCII meets CJK text, in order."""
    if _HAS_CJK.search(text) is None:
        return []
    breaks: list[int] = []
    for run in _ASCII_RUN.finditer(text):
        start, end = run.span()
        if start and text[start - 1] in _CJK:
            breaks.append(start)
        if end < len(text) and text[end] in _CJK:
            breaks.append(end)
    return breaks


def _spaced(folded: Folded, breaks: list[int]) -> Folded:
    """`folded` with a space inserted before each position in `breaks`, and its map
    extended: text after a space shifts by one, and the space maps to the character after
    it."""
    text = folded.text
    segments = (
        zip(folded._out, folded._orig, folded._verbatim, strict=True)
        if folded._out
        else [(0, 0, True)]
    )
    ends = [*folded._out[1:], len(text)] if folded._out else [len(text)]
    out: list[int] = []
    orig: list[int] = []
    verbatim: list[bool] = []
    j = 0  # spaces inserted so far
    for (seg_out, seg_orig, seg_verbatim), seg_end in zip(segments, ends, strict=True):
        piece = seg_out
        while j < len(breaks) and breaks[j] < seg_end:
            at = breaks[j]
            at_orig = seg_orig + (at - seg_out) if seg_verbatim else seg_orig
            if at > piece:
                out.append(piece + j)
                orig.append(seg_orig + (piece - seg_out) if seg_verbatim else seg_orig)
                verbatim.append(seg_verbatim)
            out.append(at + j)
            orig.append(at_orig)
            verbatim.append(False)
            piece = at
            j += 1
        if piece < seg_end:
            out.append(piece + j)
            orig.append(seg_orig + (piece - seg_out) if seg_verbatim else seg_orig)
            verbatim.append(seg_verbatim)
    pieces = [text[a:b] for a, b in zip([0, *breaks], [*breaks, len(text)], strict=True)]
    return Folded(" ".join(pieces), tuple(out), tuple(orig), tuple(verbatim), folded.had_invisible)


def fold(text: str, *, invisible: str = "") -> Folded:
    """Fold `text`; each invisible character becomes `invisible` (nothing by default, so
    "pre\u200bvious" reads as one word; " " reads "ignore\u2060previous" as two)."""
    if text.isascii():
        return Folded(text)
    if _SWAPPED.search(text):
        text = text.translate(_ONE_TO_ONE)
        if text.isascii():
            return Folded(text)
    parts: list[str] = []
    out: list[int] = []
    orig: list[int] = []
    verbatim: list[bool] = []
    had_invisible = False
    written = 0
    copied_to = 0
    for match in _FOLDED.finditer(text):
        i = match.start()
        char = text[i]
        if char not in _FOLDED_CHARS:  # above the BMP and left as it is
            continue
        if i > copied_to:
            out.append(written)
            orig.append(copied_to)
            verbatim.append(True)
            parts.append(text[copied_to:i])
            written += i - copied_to
        if char in INVISIBLE:
            had_invisible = True
            replacement = invisible
        else:
            replacement = unicodedata.normalize("NFKC", char)
        if replacement:
            out.append(written)
            orig.append(i)
            verbatim.append(False)
            parts.append(replacement)
            written += len(replacement)
        copied_to = i + 1
    if copied_to == 0:  # nothing replaced: offsets are the original's
        folded = Folded(_dots(text))
    else:
        if copied_to < len(text):
            out.append(written)
            orig.append(copied_to)
            verbatim.append(True)
            parts.append(text[copied_to:])
        # Same-length swap, so the offset map above still holds.
        text = _dots("".join(parts))
        folded = Folded(text, tuple(out), tuple(orig), tuple(verbatim), had_invisible)
    breaks = _script_breaks(folded.text)
    return _spaced(folded, breaks) if breaks else folded


def is_blank(text: str) -> bool:
    """Whether `text` shows nothing: only whitespace, invisible characters (U+200B, U+FEFF,
    U+3164, ...) and the braille blank (U+2800), so that "not empty" means readable."""
    if text.isascii():
        return not text.strip()
    return not fold(text).text.replace("\u2800", "").strip()
