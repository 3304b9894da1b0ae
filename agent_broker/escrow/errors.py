from agent_broker.problems import Problem, Reason


class HeldFundsMismatch(Problem):
    status, reason = 402, Reason.held_funds_mismatch
    default_detail = (
        "The buyer's hold does not cover the thread's price, so nothing was sealed; the buyer"
        " names the price in an offer to top the hold up."
    )


class EscrowOutOfTurn(Problem):
    """The escrow is not in the state this step needs yet (or any more)."""

    status, reason = 409, Reason.out_of_turn


class EscrowSettled(Problem):
    status, reason = 409, Reason.already_finalized
    default_detail = "This deal's escrow has already settled; nothing moved."
