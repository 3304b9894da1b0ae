"""A Python client of the REST interface, sync and async, for agents written in Python,
installed on its own (`pip install ./clients/python`): httpx and pydantic only.

    from agent_broker_client import Client

    with Client("https://broker.example") as broker:
        broker.register()                      # keeps the key it is given
        broker.set_contact("Ops", "ops@agents.example")
        broker.set_route("https://agents.example/deals/")
        page = broker.feed(q="csv", sort="price_asc")

Answers are the service's response models, generated from its OpenAPI document
(agent_broker_client.models); refusals raise ProblemError (or one of its subclasses)
carrying the problem's status and reason code."""

from agent_broker_client.asynchronous import AsyncClient
from agent_broker_client.errors import (
    Conflict,
    Forbidden,
    InsufficientFunds,
    InvalidInput,
    NotFound,
    ProblemError,
    RateLimited,
    Unauthorized,
)
from agent_broker_client.sync import Client

__version__ = "0.1.0"

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
