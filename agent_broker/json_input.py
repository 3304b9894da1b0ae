"""JSON from outside the service (request headers, query cursors, tokens, answers of
remote hosts), parsed so that every malformed document fails the same way, as a
ValueError its caller answers 400 to or records as a failure.

Nesting is bounded before parsing. json.loads recurses once per level: past the
interpreter's recursion limit it raises RecursionError (which callers catching
ValueError would let escape as a 500), and where a library raised that limit (py_ecc,
under the x402 wallet code, sets 100,000) a few tens of thousands of "[" crash the
process on a thread's stack instead. No document this service reads nests anywhere near
MAX_DEPTH."""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64


def nests_deeper_than(data: bytes, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than `limit` (a linear scan, run only
    when the document holds enough brackets to possibly do so)."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def loads(data: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads for a document from outside: one nested deeper than `max_depth` is a
    ValueError like any other malformed document."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if nests_deeper_than(raw, max_depth):
        raise ValueError(f"the JSON document nests deeper than {max_depth} levels")
    try:
        return json.loads(data)
    except RecursionError:  # the interpreter's limit set lower than max_depth
        raise ValueError("the JSON document nests too deeply") from None
