"""The one authentication seam: the Authenticator resolves a request's `Caller` under the
policy its route declared (agent_broker.http.policy), from whatever credential the request
carries. API keys (x-api-key), dashboard sessions and agent OAuth tokens (bearer JWTs,
verified in bearer.py before any database session opens) are the kinds resolved, and
payments on the metered routes through the PaymentScheme create_app registers (x402,
settled before the route's transaction opens)."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy.orm import Session

from agent_broker.accounts import credentials, identities
from agent_broker.accounts.caller import Caller
from agent_broker.auth.bearer import Identity, oauth_identity, session_identity
from agent_broker.auth.keys import active_account, key_caller
from agent_broker.auth.payment import PaidCall, PaymentScheme
from agent_broker.config import Settings
from agent_broker.db.dispatch import run
from agent_broker.db.session import request_transactions, transaction
from agent_broker.http.context import context_of
from agent_broker.http.policy import AuthPolicy, CredentialKind, presented_key
from agent_broker.problems import ApiKeyDisabled, Forbidden, IdentityConflict, Unauthorized

_BEARERS = {CredentialKind.session: session_identity, CredentialKind.oauth: oauth_identity}


class Authenticator:
    """Registered by create_app as the app's authenticator; `payments` is the payment
    scheme of the metered routes, None when payments are off."""

    def __init__(self, settings: Settings, payments: PaymentScheme | None) -> None:
        self.settings = settings
        self.payments = payments

    async def __call__(self, request: Request, policy: AuthPolicy) -> Caller:
        # The identity and the payment come first: they may call out to the network (key
        # sets, the facilitator), which happens with no database session open.
        bearer = policy.bearer
        identity = await _BEARERS[bearer](request) if bearer is not None else None
        paid = None
        if policy.metered and self.payments is not None:
            paid = await self.payments.settle(request)
        presented = presented_key(request)
        if policy.detached:
            # A short transaction of its own, closed before the route runs.
            async with transaction(context_of(request).db, write=False) as session:
                return await run(
                    session, self._resolve, request, session, presented, policy, identity, paid
                )
        # The request's own session, which the route's ReadSession/WriteSession then gets.
        session = await request_transactions(request).session(write=policy.writes)
        return await run(
            session, self._resolve, request, session, presented, policy, identity, paid
        )

    def _resolve(
        self,
        request: Request,
        session: Session,
        presented: str | None,
        policy: AuthPolicy,
        identity: Identity | None,
        paid: PaidCall | None,
    ) -> Caller:
        if paid is not None:
            return _by_payment(session, paid)
        if identity is not None:
            caller = self._by_identity(session, presented, identity)
        else:
            caller = self._by_key(request, session, presented, policy)
        missing = sorted(scope for scope in policy.scopes if not caller.has_scope(scope))
        if missing:
            raise Forbidden(
                f"This credential lacks the scope(s) needed here: {', '.join(missing)}."
            )
        return caller

    def _by_key(
        self, request: Request, session: Session, presented: str | None, policy: AuthPolicy
    ) -> Caller:
        if not presented:
            if policy.metered and self.payments and "authorization" not in request.headers:
                # No credential at all reached a payable route: offer to be paid instead.
                raise self.payments.challenge(request)
            raise Unauthorized()
        if CredentialKind.api_key not in policy.kinds:
            raise Unauthorized("An API key is not accepted on this route.")
        return key_caller(session, self.settings, presented)

    def _by_identity(self, session: Session, presented: str | None, identity: Identity) -> Caller:
        """A bearer token acts for the account its identity is linked to. A session does so
        whether the account is disabled or not (its operator rotates the key through one);
        an agent's OAuth token is refused like the account's key."""
        account_id = identities.linked_account(session, identity.issuer, identity.subject)
        if account_id is None:
            raise Unauthorized(
                "This identity is not linked to an account yet: make one call carrying both "
                "the session and the account's x-api-key."
            )
        if presented and active_account(session, self.settings, presented).id != account_id:
            raise IdentityConflict(
                "This session's identity is linked to another account than this API key's."
            )
        account = credentials.account_by_id(session, account_id)
        if account is None:
            raise Unauthorized("The account this identity is linked to no longer exists.")
        if identity.via is CredentialKind.oauth and account.status != "active":
            raise ApiKeyDisabled("This account is disabled; its OAuth tokens are refused too.")
        return Caller(
            account=account,
            via=identity.via,
            scopes=identity.scopes,
            token=identity.token,
            identity=(identity.issuer, identity.subject),
        )


def _by_payment(session: Session, paid: PaidCall) -> Caller:
    """The account a settled payment credited (opened for it, for a new wallet)."""
    account = credentials.account_by_id(session, paid.account_id)
    if account is None:
        raise Unauthorized("The account this payment credited no longer exists.")
    if account.status != "active":
        raise ApiKeyDisabled()
    return Caller(account=account, via=CredentialKind.x402)
