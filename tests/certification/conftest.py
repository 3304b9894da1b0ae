"""Certification against a local HTTPS deal route: the server of
tests/support/fixtures/domains.py, whose `/deal` path answers the liveness probe as each
test sets."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.support.accounts import Agent, register
from tests.support.certification import ROUTE
from tests.support.domains import prove
from tests.support.tls import TLSServer


@pytest.fixture
def app(make_domain_app):  # type: ignore[no-untyped-def]
    # No welcome credit, so each test sets the balance it needs.
    return make_domain_app(domain_grant_micro=0)


@pytest.fixture
def prover(client: TestClient, challenge_server: TLSServer) -> Agent:
    """An agent whose deal route is on a domain it proved."""
    agent = register(client)
    prove(client, challenge_server, agent, ROUTE)
    return agent
