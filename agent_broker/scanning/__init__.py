"""Content scanning: contact details and prompt injection in free text (SPEC.md 1.10)."""

from agent_broker.scanning.errors import ContactLeak, PromptInjection
from agent_broker.scanning.service import Finding, ensure_clean, scan

__all__ = ["ContactLeak", "PromptInjection", "Finding", "ensure_clean", "scan"]
