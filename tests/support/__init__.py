"""What the tests share: builders and helpers in plain modules that tests import
(tests/support/*.py), and fixtures in tests/support/fixtures, which tests/conftest.py loads
for every test through `pytest_plugins`. A test never imports a conftest.py or another
test module; anything two test modules use lives here."""
