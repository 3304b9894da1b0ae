"""The client's event-stream line splitter: lines end at CR LF, LF or CR only, wherever
the chunks the stream arrives in happen to break."""

from __future__ import annotations

import asyncio

import pytest

from agent_broker_client.events import LineSplitter, amessages, messages


def _lines(*chunks: bytes) -> list[str]:
    splitter = LineSplitter()
    return [line for chunk in chunks for line in splitter.feed(chunk)]


def test_each_line_end_of_the_format_ends_a_line():
    assert _lines(b"a\r\nb\nc\rd\r\n") == ["a", "b", "c", "d"]


def test_other_line_breaks_stay_inside_a_line():
    text = "x\u2028y\u2029z\x85w\x0bv\x0cu\x1ct\x1ds\x1er"
    assert _lines(text.encode() + b"\r\n") == [text]


def test_a_cr_ending_one_chunk_and_a_lf_opening_the_next_end_one_line():
    assert _lines(b"a\r", b"\nb\r\n") == ["a", "b"]
    assert _lines(b"a\r", b"\n", b"\nb\n") == ["a", "", "b"]


def test_a_cr_alone_ends_a_line_at_once():
    splitter = LineSplitter()
    assert splitter.feed(b"a\r") == ["a"]  # not held back waiting on a LF
    assert splitter.feed(b"b\r") == ["b"]
    assert splitter.feed(b"\r") == [""]
    assert splitter.feed(b"c\n") == ["c"]


def test_only_a_lf_straight_after_a_cr_is_part_of_its_line_end():
    assert _lines(b"a\r\r\n") == ["a", ""]
    assert _lines(b"a\r", b"b\n") == ["a", "b"]


def test_a_line_split_across_chunks_is_joined():
    assert _lines(b"da", b"ta: {", b'"a"', b":1}\r\n") == ['data: {"a":1}']


@pytest.mark.parametrize("cut", range(1, len("é\u2028".encode())))
def test_a_character_split_across_chunks_is_decoded_whole(cut):
    encoded = "é\u2028".encode() + b"\n"
    assert _lines(encoded[:cut], encoded[cut:]) == ["é\u2028"]


def test_an_unended_last_line_is_not_given_out():
    assert _lines(b"a\nb") == ["a"]


def test_a_leading_byte_order_mark_is_dropped_even_split_across_chunks():
    bom = "\ufeff".encode()
    # Only the stream's first: another is text of its line.
    assert _lines(bom[:2], bom[2:] + b"a\n" + bom + b"b\n") == ["a", "\ufeffb"]


STREAM = (
    b": events\r\nretry: 1000\r\n\r\n"
    b"id: msg_1\r\nevent: thread.opened\r\n"
    + 'data: {"type":"thread.opened","timestamp":"2025-01-01T00:00:00Z",'
    '"data":{"diff":"a\u2028b\x85c"}}\r\n\r\n'.encode()
)


@pytest.mark.parametrize("size", [1, 2, 7, len(STREAM)])
def test_messages_come_whole_in_chunks_of_any_size(size):
    chunks = [STREAM[i : i + size] for i in range(0, len(STREAM), size)]
    (event,) = messages(chunks)
    assert (event.id, event.type, event.data) == (
        "msg_1",
        "thread.opened",
        {"diff": "a\u2028b\x85c"},
    )

    async def read() -> list:
        async def arrive():  # type: ignore[no-untyped-def]
            for chunk in chunks:
                yield chunk

        return [event async for event in amessages(arrive())]

    assert asyncio.run(read()) == [event]
