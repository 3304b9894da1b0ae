from agent_broker.problems import Problem, Reason


class SelfListingNegotiation(Problem):
    status, reason = 409, Reason.self_listing_negotiation
    default_detail = "You cannot open a negotiation on your own listing."


class ListingExpired(Problem):
    status, reason = 410, Reason.listing_expired
    default_detail = "The listing is no longer live; nothing was held."


class OutOfTurn(Problem):
    status, reason = 409, Reason.out_of_turn
    default_detail = "It is not your turn on this thread; wait for the other party's offer."


class ThreadAutoClosed(Problem):
    status, reason = 410, Reason.thread_auto_closed
    default_detail = "This thread was closed automatically; its hold was released."


class AlreadyFinalized(Problem):
    status, reason = 409, Reason.already_finalized
    default_detail = "This thread was already finalized into a deal."


class ProfileIncomplete(Problem):
    """428 with the same missing / blocked_actions / next data as the profile."""

    status = 428
