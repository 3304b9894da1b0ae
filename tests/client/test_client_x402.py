"""The client with a wallet and no key: a payable call's 402 is paid through x402 (the
local facilitator checks the signature for real), the account it opens keeps its key in
the client, and later calls use that key. A paid call waits out the service's settlement;
the wallet recovers the account's key by signing the service's sign-in challenge."""

from __future__ import annotations

import asyncio

import pytest
from eth_account import Account

from agent_broker.client import AsyncClient, Client, InsufficientFunds, Unauthorized
from agent_broker.payments.x402.facilitator import SETTLE_DEADLINE_SECONDS
from agent_broker.pricing import PACK_MICRO
from agent_broker_client.payment import paid_timeout_seconds


@pytest.fixture
def app(make_app, x402_settings):
    return make_app(**x402_settings)


def test_a_wallet_pays_for_the_feed_and_keeps_the_new_key(app, live_server, facilitator):
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


def test_a_paid_call_waits_longer_than_the_service_may_take_to_settle(live_server, facilitator):
    # Each facilitator call takes longer than the client's own timeout: a paid call still
    # waits for its answer instead of sending the payment again (refused as a replay).
    facilitator.stall_seconds = 1.2
    with Client(live_server, wallet=Account.create().key.hex(), timeout=1.0) as agent:
        assert agent.feed().listings == []
        assert agent.api_key
    assert [path for path, _ in facilitator.calls] == ["/verify", "/settle"]
    assert paid_timeout_seconds() > 2 * SETTLE_DEADLINE_SECONDS  # verify, then settle


def test_a_wallet_recovers_the_key_its_first_payment_gave(live_server):
    wallet = Account.create().key.hex()
    with Client(live_server, wallet=wallet) as first:
        first.feed()
        lost = first.api_key
    with Client(live_server, wallet=wallet) as agent:
        # The service's messages name its public address (https://broker.test here), not
        # the address the client was given: the client signs only a sign-in to its own.
        with pytest.raises(ValueError, match="not a sign-in to 127.0.0.1"):
            agent.recover_wallet_key()
        recovered = agent.recover_wallet_key(domain="broker.test")
        assert agent.api_key == recovered.api_key != lost
        assert agent.account().account_id == recovered.account_id
    with Client(live_server, lost) as old, pytest.raises(Unauthorized):
        old.account()


def test_the_async_client_recovers_the_key_too(live_server):
    wallet = Account.create()

    async def scenario() -> tuple[str, str]:
        async with AsyncClient(live_server, wallet=wallet) as agent:
            await agent.feed()
            lost = agent.api_key
            recovered = await agent.recover_wallet_key(domain="broker.test")
            assert (await agent.account()).account_id == recovered.account_id
            return lost, recovered.api_key

    lost, new = asyncio.run(scenario())
    assert lost and new and lost != new


def test_recovering_a_key_needs_the_wallet(live_server):
    with Client(live_server) as agent, pytest.raises(ValueError, match="wallet"):
        agent.recover_wallet_key()
