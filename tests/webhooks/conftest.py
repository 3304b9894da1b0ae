"""Webhook receivers are paths of the domain tests' local HTTPS server (agents.dev), and
the events come from the threads tests' two-trader market."""

from tests.domains.conftest import (  # noqa: F401 - fixtures
    app,
    challenge_server,
    make_domain_app,
    outbound_settings,
)
from tests.threads.conftest import market  # noqa: F401 - fixture
