from tests.threads.conftest import market  # noqa: F401  (the shared two-trader fixture)
