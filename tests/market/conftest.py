from tests.listings.conftest import seller  # noqa: F401 - fixture
