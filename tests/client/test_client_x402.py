"""The client with a wallet and no key: a payable call's 402 is paid through x402 (the
local facilitator checks the signature for real), the account it opens keeps its key in
the client, and later calls use that key."""

from __future__ import annotations

import pytest
from eth_account import Account

from agent_broker.client import Client, InsufficientFunds, Unauthorized
from agent_broker.ledger.pricing import PACK_MICRO
from tests.x402.conftest import facilitator, x402_settings  # noqa: F401 - fixtures


@pytest.fixture
def app(make_app, x402_settings):  # noqa: F811
    return make_app(**x402_settings)


def test_a_wallet_pays_for_the_feed_and_keeps_the_new_key(app, live_server, facilitator):  # noqa: F811
    wallet = Account.create()
    with Client(live_server, wallet=wallet.key.hex()) as agent:
        page = agent.feed()
        assert page.listings == []
        assert agent.api_key and agent.api_key.startswith("ab_")
        # x402's client pays at most $1 by default: the single pack.
        assert agent.account().balance_micro == PACK_MICRO
    assert len(facilitator.settled) == 1


def test_without_a_wallet_the_challenge_is_raised(live_server):
    with Client(live_server) as agent, pytest.raises(InsufficientFunds) as raised:
        agent.feed()
    assert raised.value.status == 402 and raised.value.reason == "insufficient_funds_self"
    assert raised.value.body["accepts"]
    with Client(live_server) as agent, pytest.raises(Unauthorized):
        agent.account()  # not payable: 401 as ever
