"""JSON from outside the service (agent_broker.json_input): a document nested past
MAX_DEPTH is a ValueError before it is parsed, whatever the interpreter's recursion limit
(a library may have raised it, and the parser would then recurse until the thread's
stack runs out); other documents parse as json.loads parses them."""

from __future__ import annotations

import sys

import pytest

from agent_broker import json_input
from agent_broker.json_input import MAX_DEPTH


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_document_at_the_depth_limit_parses():
    assert json_input.loads(_nested(MAX_DEPTH)) == json_input.loads(_nested(MAX_DEPTH).encode())
    assert json_input.loads('{"a": [1, {"b": "[[[[["}]}') == {"a": [1, {"b": "[[[[["}]}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 3_000])
def test_a_document_nested_deeper_is_a_value_error(depth):
    with pytest.raises(ValueError, match="nests deeper"):
        json_input.loads(_nested(depth))


def test_the_bound_holds_whatever_the_recursion_limit():
    # As after `import py_ecc`: without the bound, this would parse (and deeper documents
    # would crash the process).
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with pytest.raises(ValueError, match="nests deeper"):
            json_input.loads(_nested(5_000).encode())
    finally:
        sys.setrecursionlimit(previous)


def test_brackets_inside_strings_do_not_count():
    text = '["' + "[" * 5_000 + '"]'
    assert json_input.loads(text) == ["[" * 5_000]


def test_malformed_documents_stay_value_errors():
    for bad in ("", "{", "nope", b"\xff"):
        with pytest.raises(ValueError):
            json_input.loads(bad)
