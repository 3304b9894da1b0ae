"""The Python client, for code that imports it from the server's package: the standalone
distribution `agent-broker-client` (clients/python, imported as `agent_broker_client`),
which the server depends on, under its former names. New code imports
`agent_broker_client`; answers are its generated models (agent_broker_client.models).

    from agent_broker.client import Client

    with Client("https://broker.example") as broker:
        broker.register()                      # keeps the key it is given
        page = broker.feed(q="csv", sort="price_asc")

Only the relying party's proof verifier (agent_broker.client.verify) is the server's own:
it shares the service's token code. `agent-broker agent` is the client's command
(agent_broker.client.cli)."""

from agent_broker_client import (
    AsyncClient,
    Client,
    Conflict,
    Forbidden,
    InsufficientFunds,
    InvalidInput,
    NotFound,
    ProblemError,
    RateLimited,
    Unauthorized,
)

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
