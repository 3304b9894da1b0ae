from __future__ import annotations

import pytest
from fastapi import FastAPI

from agent_broker import clock
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.membership.service import register


@pytest.fixture
def open_account(app: FastAPI):
    """Create an account (and its wallet) straight through the service layer."""

    def make() -> str:
        settings = app.state.context.settings
        with app.state.context.db.writer() as session:
            made = register(
                session,
                settings,
                RateLimiter(settings),
                accepted_terms=True,
                source="test",
                now=clock.now(),
            )
            session.commit()
        return made.account_id

    return make
