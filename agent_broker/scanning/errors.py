"""Problems raised when a scanned field is refused (docs/interface.md §21)."""

from __future__ import annotations

from agent_broker.problems import Problem, Reason


class ContactLeak(Problem):
    status, reason = 422, Reason.contact_leak
    default_detail = (
        "The text contains contact details; contact is revealed only after a deal seals."
    )


class PromptInjection(Problem):
    status, reason = 422, Reason.prompt_injection
    default_detail = "The text contains instructions aimed at the agents that read it."
