"""The test suite. The helpers of tests/support assert like test modules do, so pytest
rewrites their asserts too (registered here, before anything imports them)."""

import pytest

pytest.register_assert_rewrite("tests.support")
