"""The application context: built once by create_app, the app's only state, never
changed while the app serves (agent_broker/http/context.py)."""

from __future__ import annotations

import dataclasses

import pytest

from agent_broker.http.context import AppContext, MissingPart, app_context
from agent_broker.meta.agent_card import PublishedCard
from agent_broker.meta.metrics import Metrics
from agent_broker.payments.x402.gate import X402
from agent_broker.payments.x402.manifest import X402Manifest
from agent_broker.tokens import keys
from agent_broker.tokens.keys import Signer
from tests.support.accounts import register


def _state_names(app) -> set[str]:
    return set(app.state._state)


def test_the_context_is_the_apps_only_state_even_after_serving(app, client):
    assert _state_names(app) == {"context"}
    agent = register(client)
    for path in ("/.well-known/agent-card.json", "/.well-known/jwks.json", "/status.json"):
        assert client.get(path).status_code == 200
    assert client.get("/v1/account", headers=agent.headers).status_code == 200
    assert client.get("/.well-known/paseto-keys.json").status_code == 200
    # Nothing a route, the MCP mount or a lifespan did added an attribute beside it.
    assert _state_names(app) == {"context"}


def test_the_context_cannot_be_changed_once_built(app):
    context = app_context(app)
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.db = None  # type: ignore[misc]
    with pytest.raises(TypeError):
        context.parts[Signer] = None  # type: ignore[index]


def test_parts_are_found_by_their_class(app, client):
    context = app_context(app)
    signer = context.part(Signer)
    published = client.get("/.well-known/paseto-keys.json").json()
    assert signer.kid in str(published)
    card_keys = client.get("/.well-known/jwks.json").json()
    assert card_keys == context.part(PublishedCard).jwks
    # Payments are off in the default test settings: no x402 part, and asking for one
    # that must be there is a programming error, said as such.
    assert context.optional(X402) is None
    assert context.optional(X402Manifest) is None
    with pytest.raises(MissingPart, match="X402"):
        context.part(X402)


def test_two_parts_of_one_class_are_refused():
    with pytest.raises(ValueError, match="two parts of class Signer"):
        AppContext.collect([keys.generate(), keys.generate()])


def test_metrics_are_a_part_only_when_enabled(make_app):
    with_metrics = make_app(metrics_enabled=True)
    assert isinstance(app_context(with_metrics).optional(Metrics), Metrics)
    without = make_app(metrics_enabled=False)
    assert app_context(without).optional(Metrics) is None
