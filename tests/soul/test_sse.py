"""The chunks of an OpenAI-compatible event stream, read a network read at a time (sse.py): the
same chunks, in the same order, as the OpenAI SDK's own decoder reads from the same bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai._streaming import SSEDecoder

from kode_tui.soul.llm.sse import SSEChunks, StreamError


def chunk(text: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}}]}


def the_sdks_chunks(stream: bytes) -> list[Any]:
    """What the SDK's stream yields for `stream`: every event's JSON up to `[DONE]`."""
    chunks = []
    for sse in SSEDecoder().iter_bytes(iter([stream])):
        if sse.data.startswith("[DONE]"):
            break
        chunks.append(json.loads(sse.data))
    return chunks


def fed(stream: bytes, size: int) -> list[list[Any]]:
    """The batches `SSEChunks` hands out for `stream` read `size` bytes at a time."""
    events = SSEChunks(SSEDecoder())
    batches = []
    for start in range(0, len(stream), size):
        batch = events.feed(stream[start : start + size])
        if batch:
            batches.append(batch)
        if events.done:
            break
    return batches


USUAL = b"".join(b"data: " + json.dumps(chunk(word)).encode() + b"\n\n" for word in "abcdef")
ODD = (
    b": a comment line, then an event over two data lines\n"
    b'data: {"choices": [{"delta":\ndata:  {"content": "two lines"}}]}\n\n'
    b'event: message\ndata:{"choices": [{"delta": {"content": "named, no space"}}]}\n\n\n\n'
    b'id: 7\ndata: {"choices": [{"delta": {"content": "with an id"}}]}\n\n'
    b'data: {"choices": [{"delta": {"content": "caf\\u00e9 \xe2\x9c\x93"}}]}\n\n'
)


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("size", [1, 2, 7, 1 << 16])
def test_every_event_comes_whole_and_in_order_however_the_bytes_are_cut(
    ending: bytes, size: int
) -> None:
    stream = (USUAL + ODD + b"data: [DONE]\n\n").replace(b"\n", ending)

    batches = fed(stream, size)

    assert [c for batch in batches for c in batch] == the_sdks_chunks(stream)
    assert len(the_sdks_chunks(stream)) == 10


def test_the_events_of_one_read_come_as_one_batch() -> None:
    # The point of reading by batch: one read's events cost one hand-over, not one each.
    assert fed(USUAL + b"data: [DONE]\n\n", 1 << 16) == [[chunk(word) for word in "abcdef"]]


def test_nothing_after_done_is_read() -> None:
    stream = USUAL + b"data: [DONE]\n\n" + b"data: {not json\n\n"
    events = SSEChunks(SSEDecoder())

    assert events.feed(stream) == [chunk(word) for word in "abcdef"]
    assert events.done


def test_an_event_carrying_an_error_raises_the_servers_message() -> None:
    error = {"error": {"message": "the model is overloaded", "type": "server_error"}}
    stream = USUAL + b"data: " + json.dumps(error).encode() + b"\n\n"

    with pytest.raises(StreamError, match="the model is overloaded") as raised:
        SSEChunks(SSEDecoder()).feed(stream)
    assert raised.value.body == error["error"]


def test_json_msgspec_refuses_is_read_as_the_sdk_reads_it() -> None:
    # A lone surrogate's escape: valid for json.loads, not for msgspec.
    stream = b'data: {"choices": [{"delta": {"content": "\\ud800"}}]}\n\n'

    assert SSEChunks(SSEDecoder()).feed(stream) == the_sdks_chunks(stream)
