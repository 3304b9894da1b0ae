"""Logs as the service renders them, captured for a test (`logs`)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from agent_broker.logging import json_formatter


class CapturedLogs:
    def __init__(self, stream: io.StringIO) -> None:
        self._stream = stream

    @property
    def text(self) -> str:
        return self._stream.getvalue()

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.text.splitlines() if line.strip()]

    def events(self, event: str) -> list[dict]:
        return [line for line in self.lines() if line.get("event") == event]


@pytest.fixture
def logs(app) -> Iterator[CapturedLogs]:
    """Every line the app logs from here on, rendered exactly as the service renders it
    (the app's logging configuration is installed when the app is created)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(json_formatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield CapturedLogs(stream)
    finally:
        root.removeHandler(handler)
