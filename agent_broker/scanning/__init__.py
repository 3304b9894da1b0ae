"""Content scanning: contact details and prompt injection in free text (docs/interface.md §21)."""

from agent_broker.scanning.errors import ContactLeak, PromptInjection
from agent_broker.scanning.service import Finding, ensure_clean, scan

__all__ = ["ContactLeak", "PromptInjection", "Finding", "ensure_clean", "scan"]
