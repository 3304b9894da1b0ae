"""A Python client of the REST interface, sync and async, for agents written in Python.

    from agent_broker.client import Client

    with Client("https://broker.example") as broker:
        broker.register()                      # keeps the key it is given
        broker.set_contact("Ops", "ops@agents.example")
        broker.set_route("https://agents.example/deals/")
        page = broker.feed(q="csv", sort="price_asc")

Answers are the service's own response models; refusals raise ProblemError (or one of its
subclasses) carrying the problem's status and reason code."""

from agent_broker.client.asynchronous import AsyncClient
from agent_broker.client.errors import (
    Conflict,
    Forbidden,
    InsufficientFunds,
    InvalidInput,
    NotFound,
    ProblemError,
    RateLimited,
    Unauthorized,
)
from agent_broker.client.sync import Client

__all__ = [
    "AsyncClient",
    "Client",
    "Conflict",
    "Forbidden",
    "InsufficientFunds",
    "InvalidInput",
    "NotFound",
    "ProblemError",
    "RateLimited",
    "Unauthorized",
]
