from agent_broker.problems import Problem, Reason


class DealPurged(Problem):
    status, reason = 410, Reason.deal_purged
    default_detail = "This deal's reveal was purged 7 days after sealing."


class MissingDealRouteSelf(Problem):
    status, reason = 409, Reason.missing_deal_route_self
    default_detail = "Declare your deal route (PUT /v1/account/route) before sealing."


class MissingDealRouteCounterparty(Problem):
    status, reason = 409, Reason.missing_deal_route_counterparty
    default_detail = "The other party has no deal route declared, so the deal cannot seal."
