from agent_broker.problems import InsufficientFundsSelf, Problem, Reason


class InsufficientFunds(InsufficientFundsSelf):
    """The wallet's spendable balance cannot cover the debit or hold."""


class HoldNotCapturable(Problem):
    status, reason = 409, Reason.hold_not_capturable
    default_detail = "The escrow hold is no longer active, so it cannot be captured."


class UnbalancedEntry(ValueError):
    """A programming error: postings of one entry must sum to zero."""
