"""Each route declares its auth policy (credential kinds, scopes, metered) and the one seam
enforces it. The declarations match the interface: the payable operations are metered,
the account routes accept a dashboard session too, the attestation an OAuth token."""

from __future__ import annotations

from typing import Annotated

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute

from agent_broker.accounts.caller import Caller, CredentialKind
from agent_broker.accounts.models import Account
from agent_broker.app import ROUTERS
from agent_broker.http.policy import authenticated, policy_of
from tests.support.accounts import register
from tests.support.http import assert_problem
from tests.support.x402 import PAYABLE_OPERATIONS

KEY_OR_SESSION = {
    ("GET", "/v1/account"),
    ("GET", "/v1/account/profile"),
    ("PUT", "/v1/account/contact"),
    ("PUT", "/v1/account/route"),
    ("GET", "/v1/account/domain"),
    ("POST", "/v1/account/domain/verify"),
    ("POST", "/dashboard/keys"),
    ("POST", "/dashboard/keys/rotate"),
    ("POST", "/dashboard/credits"),
    ("GET", "/dashboard/identities"),
    ("DELETE", "/dashboard/identities/{link_id}"),
}
KEY_OR_OAUTH = {
    ("POST", "/v1/account/reputation/attestation"),
    ("POST", "/v1/threads/{thread_id}/finalize"),
}
NO_AUTH_V1 = {
    ("GET", "/dashboard/pay/{address}"),
    ("POST", "/v1/account/register"),
    # Wallet key recovery: how a holder who lost the key gets back in.
    ("POST", "/v1/account/wallet/challenge"),
    ("POST", "/v1/account/wallet/recover"),
    ("GET", "/v1/reputation/{handle}"),
    ("GET", "/v1/ledger/verify"),
    # A2A 0.3 surfaces: 501 a2a_version_not_supported to anyone.
    *(
        (method, path)
        for path in ("/v1/message:send", "/v1/message:stream", "/v1/card", "/v1/tasks/{rest:path}")
        for method in ("GET", "POST")
    ),
}


def _operations():
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute):
                for method in route.methods:
                    yield (method, route.path), policy_of(route)


def test_every_authenticated_route_declares_its_policy_as_the_interface_says():
    seen = dict(_operations())
    for operation, policy in seen.items():
        if not operation[1].startswith(("/v1", "/dashboard")) or operation in NO_AUTH_V1:
            assert policy is None, operation
            continue
        assert policy is not None, f"{operation} declares no auth policy"
        assert policy.metered == (operation in PAYABLE_OPERATIONS), operation
        kinds = {CredentialKind.api_key}
        if operation in KEY_OR_SESSION:
            kinds.add(CredentialKind.session)
        if operation in KEY_OR_OAUTH:
            kinds.add(CredentialKind.oauth)
        assert set(policy.kinds) == kinds, operation
        assert policy.scopes == {"read"}, operation
    assert set(seen) >= PAYABLE_OPERATIONS | KEY_OR_SESSION | KEY_OR_OAUTH


@pytest.fixture
def guarded_app(make_app) -> FastAPI:
    app = make_app()

    @app.get("/test/session-only")
    def session_only(
        caller: Annotated[Caller, authenticated(kinds=frozenset({CredentialKind.session}))],
    ) -> dict:
        return {"account_id": caller.account_id}

    @app.get("/test/key")
    def key_route(caller: Annotated[Caller, authenticated()]) -> dict:
        return {"account_id": caller.account_id, "via": caller.via}

    return app


def test_a_kind_the_policy_does_not_list_is_refused(guarded_app):
    from fastapi.testclient import TestClient

    with TestClient(guarded_app, raise_server_exceptions=False) as client:
        agent = register(client)
        assert_problem(client.get("/test/session-only", headers=agent.headers), 401, "unauthorized")
        answered = client.get("/test/key", headers=agent.headers)
        assert answered.json() == {"account_id": agent.account_id, "via": "api_key"}
        assert_problem(client.get("/test/key"), 401, "unauthorized")


def test_an_api_key_holds_every_scope_and_a_token_only_its_own():
    account = Account(id="a")
    key = Caller(account=account, via=CredentialKind.api_key)
    token = Caller(account=account, via=CredentialKind.oauth, scopes=frozenset({"read"}))
    assert key.has_scope("account:write") and key.has_scope("read")
    assert token.has_scope("read") and not token.has_scope("account:write")


def test_the_caller_is_resolved_before_any_session_opens():
    """FastAPI solves a route's dependencies in the order they are declared. The caller
    comes first wherever one is declared: its bearer token or payment may call out to the
    network, which must happen before the request's session (and SQLite's write gate) is
    taken (agent_broker.db.session.RequestTransactions)."""
    from agent_broker.db.session import read_session, write_session

    for router in ROUTERS:
        for route in router.routes:
            if not isinstance(route, APIRoute) or policy_of(route) is None:
                continue
            calls = [dependency.call for dependency in route.dependant.dependencies]
            caller = next(i for i, call in enumerate(calls) if hasattr(call, "policy"))
            sessions = [i for i, call in enumerate(calls) if call in (read_session, write_session)]
            assert all(caller < i for i in sessions), route.path
