"""The client's refusals (agent_broker_client.errors), under their former module name."""

from agent_broker_client.errors import (
    Conflict,
    Forbidden,
    InsufficientFunds,
    InvalidInput,
    NotFound,
    ProblemError,
    RateLimited,
    Unauthorized,
    problem_of,
)

__all__ = [
    "Conflict",
    "Forbidden",
    "InsufficientFunds",
    "InvalidInput",
    "NotFound",
    "ProblemError",
    "RateLimited",
    "Unauthorized",
    "problem_of",
]
