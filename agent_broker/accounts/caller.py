"""Who is calling: the account a request or a protocol message acts for, and how it
proved it. Built by the authentication seam (agent_broker.auth); services take it
without knowing anything of HTTP."""

from __future__ import annotations

from dataclasses import dataclass

from agent_broker.accounts.models import AccountRecord
from agent_broker.http.policy import CredentialKind


@dataclass(frozen=True)
class Caller:
    # The account's row as authentication read it, in the request's transaction.
    account: AccountRecord
    via: CredentialKind
    # The scopes the credential carries; None means every scope (an API key).
    scopes: frozenset[str] | None = None
    # An OAuth token's (issuer, jti, exp), for the operations a token may perform once.
    token: tuple[str, str, int] | None = None
    # The (issuer, subject) a session or OAuth token named: the link it came through.
    identity: tuple[str, str] | None = None

    @property
    def account_id(self) -> str:
        return self.account.id

    def has_scope(self, scope: str) -> bool:
        return self.scopes is None or scope in self.scopes
