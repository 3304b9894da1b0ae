"""The result of a scan; re-exported by `service`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["contact_leak", "prompt_injection"]


@dataclass(frozen=True)
class Finding:
    """What matched and where, as offsets into the scanned text. Never the text itself,
    so a finding can be logged without copying a secret."""

    kind: Kind
    rule: str
    start: int
    end: int
