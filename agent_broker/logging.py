"""Structured logs: one JSON object per line on standard error, for the service's own
events and for every library logging through the standard `logging` module (uvicorn,
SQLAlchemy, ...). Lines logged while a request is handled carry its `request_id`
(agent_broker.http.request_id binds it).

Nothing that could carry a secret (headers, bodies, query strings) is ever logged; as a
second line of defence, values of fields whose names look like credentials are replaced
before rendering."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from structlog.typing import EventDict, Processor

REDACTED = "[redacted]"
# Field names (lower case, `-` read as `_`) whose values are never written out.
_SECRET_FIELDS = frozenset(
    {
        "api_key",
        "x_api_key",
        "authorization",
        "cookie",
        "set_cookie",
        "password",
        "secret",
        "token",
        "signing_key",
        "key_hash_secret",
    }
)
_HANDLER_MARK = "_agent_broker_handler"
# Library loggers that install handlers of their own; their records go through ours.
_ADOPTED = ("uvicorn", "uvicorn.error", "sqlalchemy")
# uvicorn's access log writes the raw path with its query string: never on (the access
# line of agent_broker.http.request_id replaces it).
_SILENCED = ("uvicorn.access",)
# Warnings only: libraries that log whole outbound URLs (query strings included) at INFO,
# and Alembic's plugin set-up, a line per built-in plugin whenever Alembic is imported.
_QUIETED = ("httpx", "httpcore", "httpx2", "httpcore2", "alembic.runtime.plugins")


def redact_secrets(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
    event_dict.pop("color_message", None)  # uvicorn's terminal-coloured duplicate
    for name in list(event_dict):
        if name.lower().replace("-", "_") in _SECRET_FIELDS:
            event_dict[name] = REDACTED
    return event_dict


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]


def json_formatter() -> logging.Formatter:
    """Renders structlog events and plain `logging` records alike as one JSON line."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.ExtraAdder(), *_shared_processors()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
    )


class _StandardErrorHandler(logging.StreamHandler):
    """Standard error as it was when logging was set up, or as it is now once that one is
    closed: a command run in-process (a test's CLI runner) sets logging up while its
    standard error is a buffer it closes afterwards, and later lines must not be lost."""

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(self.stream, "closed", False):
            self.stream = sys.stderr
        super().emit(record)


def configure(level: str = "INFO") -> None:
    """Idempotent: every app (and every test app) may call it again."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *_shared_processors(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(handler)
    handler = _StandardErrorHandler()
    setattr(handler, _HANDLER_MARK, True)
    handler.setFormatter(json_formatter())
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in _ADOPTED:
        adopted = logging.getLogger(name)
        adopted.handlers.clear()
        adopted.propagate = True
    for name in _SILENCED:
        silenced = logging.getLogger(name)
        silenced.handlers.clear()
        silenced.propagate = False
    for name in _QUIETED:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
