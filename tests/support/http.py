"""Requests and servers: idempotency keys, problem answers, a real uvicorn for an app, and
waiting on a condition."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import uvicorn
from fastapi import FastAPI


def new_key() -> str:
    return str(uuid.uuid4())


def assert_problem(response, status: int, reason: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["reason"] == reason
    assert body["type"].endswith("/" + reason)
    assert body["title"]
    assert body["detail"]
    return body


def free_port() -> int:
    """A loopback port nothing listens on at the moment of asking."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Poll `condition` until it holds; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        time.sleep(0.01)


@contextmanager
def serving(app: FastAPI) -> Iterator[tuple[str, int]]:
    """The app served by a real uvicorn on a free loopback port: (base URL, port)."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("live server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
