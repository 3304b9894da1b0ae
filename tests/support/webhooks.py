"""Webhook endpoints on the local HTTPS server (agents.dev): setting one, answering its
deliveries, running the delivery job, and the events received with their signatures
checked by the standardwebhooks library."""

from __future__ import annotations

import json

from fastapi import FastAPI
from fastapi.testclient import TestClient
from standardwebhooks import Webhook

from tests.support.accounts import Agent
from tests.support.jobs import run
from tests.support.tls import Answer, TLSServer

HOOK = "/hook"


def set_endpoint(client: TestClient, agent: Agent, path: str = HOOK) -> str:
    """Point the agent's webhook at `path` on agents.dev: the new secret."""
    response = client.put(
        "/v1/account/webhook", json={"url": f"https://agents.dev{path}"}, headers=agent.headers
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["url"] == f"https://agents.dev{path}" and body["secret"].startswith("whsec_")
    return body["secret"]


def deliver(app: FastAPI) -> str:
    return run(app, "deliver-webhooks")


def deliveries(server: TLSServer, secret: str, path: str = HOOK, since: int = 0) -> list[dict]:
    """Every delivery to `path` (from the `since`-th request on), its signature checked."""
    events = []
    for seen in server.seen[since:]:
        if seen.path != path or seen.method != "POST":
            continue
        document = Webhook(secret).verify(seen.body, seen.headers)
        assert json.loads(seen.body) == document
        assert seen.headers["webhook-id"].startswith("msg_")
        events.append(document)
    return events


def accept(server: TLSServer, path: str = HOOK) -> None:
    """The receiver at `path` answers 204 from now on."""
    server.answer(path, Answer(status=204))
