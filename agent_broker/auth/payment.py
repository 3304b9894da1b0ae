"""How a payment scheme plugs into authentication: create_app registers one (x402, when it
is on) and the authenticator asks it to settle a metered route's payment, or for the
challenge a credential-less request gets instead of 401."""

from __future__ import annotations

from typing import Protocol

from fastapi import Request

from agent_broker.problems import Problem


class PaidCall(Protocol):
    """A settled payment: the account it credited acts as the caller."""

    @property
    def account_id(self) -> str: ...


class PaymentScheme(Protocol):
    async def settle(self, request: Request) -> PaidCall | None:
        """Settle the payment the request carries; None when it carries none."""
        ...

    def challenge(self, request: Request) -> Problem:
        """The 402 answer for a metered route reached with no credential at all."""
        ...
