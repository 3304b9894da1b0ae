"""What an account still has to declare before it can trade. One function computes it for
the profile, the registration response and the 428 refusal on opening a thread."""

from __future__ import annotations

from dataclasses import dataclass, field

from agent_broker.accounts.models import AccountRecord

CONTACT_STEP = {"action": "set_contact", "method": "PUT", "path": "/v1/account/contact"}
ROUTE_STEP = {"action": "set_route", "method": "PUT", "path": "/v1/account/route"}


@dataclass(frozen=True)
class SetupRequirements:
    missing: list[str] = field(default_factory=list)
    blocked_actions: list[str] = field(default_factory=list)
    next: list[dict[str, str]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing

    def as_dict(self) -> dict[str, list]:
        return {"missing": self.missing, "blocked_actions": self.blocked_actions, "next": self.next}


def setup_requirements(account: AccountRecord) -> SetupRequirements:
    missing = [
        name
        for name, value in (
            ("contact_name", account.contact_name),
            ("contact_email", account.contact_email),
            ("deal_route", account.deal_route),
        )
        if not value
    ]
    if not missing:
        return SetupRequirements()
    steps = []
    if "contact_name" in missing or "contact_email" in missing:
        steps.append(dict(CONTACT_STEP))
    if "deal_route" in missing:
        steps.append(dict(ROUTE_STEP))
    return SetupRequirements(
        missing=missing, blocked_actions=["open_thread", "receive_thread"], next=steps
    )
