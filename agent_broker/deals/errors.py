from agent_broker.problems import Problem, Reason


class DealPurged(Problem):
    status, reason = 410, Reason.deal_purged
    default_detail = "This deal's reveal was purged 7 days after sealing."
