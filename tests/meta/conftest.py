from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta

import pytest

from agent_broker import clock
from agent_broker.logging import json_formatter
from agent_broker.meta.models import HealthSample


def noon_today() -> datetime:
    """Move the service clock to 12:00 UTC of the current day, so the day has room on
    both sides whatever the hour the suite runs at."""
    now = clock.now()
    target = datetime.combine(now.date(), time(12), tzinfo=UTC)
    clock.advance(target - now)
    return target


def add_samples(app, *samples: tuple[datetime, bool] | tuple[datetime, bool, str]) -> None:
    with app.state.db.writer() as session:
        for taken_at, ok, *detail in samples:
            detail_text = detail[0] if detail else ("ok" if ok else "database: OperationalError")
            session.add(HealthSample(taken_at=taken_at, ok=ok, detail=detail_text))
        session.commit()


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


def days_ago(moment: datetime, days: int, hours: float = 0) -> datetime:
    return moment - timedelta(days=days, hours=hours)
