"""Apps here keep their development key under the test's own temporary var dir."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi import FastAPI


@pytest.fixture
def var_dir(tmp_path: Path) -> Path:
    return tmp_path / "var"


@pytest.fixture
def app(make_app: Callable[..., FastAPI], var_dir: Path) -> FastAPI:
    return make_app(var_dir=str(var_dir))
