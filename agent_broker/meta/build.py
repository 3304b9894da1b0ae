"""The build fingerprint: 12 hex characters that change whenever the shipped code does."""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent


@cache
def fingerprint() -> str:
    override = os.environ.get("BROKER_BUILD", "").strip().lower()
    if len(override) == 12 and all(c in "0123456789abcdef" for c in override):
        return override
    digest = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
