from __future__ import annotations

from agent_broker.problems import Problem, Reason


class ProcessorUnavailable(Problem):
    status, reason = 502, Reason.processor_unavailable
    default_detail = "The payment processor is not available; nothing was charged."


class InvoiceAlreadyConsumed(Problem):
    status, reason = 409, Reason.invoice_already_consumed
    default_detail = "This payment was already credited; nothing more was credited."


class InvoiceConflict(Problem):
    status, reason = 409, Reason.invoice_conflict
    default_detail = "The callback contradicts the invoice it names; nothing was credited."
