"""Response bodies of GET /v1/ledger/verify (docs/interface.md §19)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_broker.http.responses import Timestamp


class ChainHead(BaseModel):
    hash: str = Field(
        pattern="^[0-9a-f]{64}$", description="SHA-256 of the last sealed link, 64 hex characters"
    )
    sequence: int = Field(ge=1, description="journal sequence of the last sealed row")
    hash_algorithm: Literal["sha256"]


class SealedRange(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: int | None = Field(
        alias="from", description="first sealed sequence, inclusive; null = start of journal"
    )
    through: int = Field(
        description="end of the sealed range, exclusive (the verdict is served only once "
        "something is sealed)"
    )


class LedgerProblem(BaseModel):
    sequence: int | None = Field(
        description="the journal row (or checkpoint) concerned; null when the problem is not "
        "tied to a journal row (balances, holds, threads)"
    )
    kind: str = Field(
        description="row_altered, row_missing, row_unsealed, seal_missing, chain_link_broken, "
        "checkpoint_mismatch, checkpoint_missing, seal_outside_range, chain_regressed, "
        "verdict_unreadable, balance_mismatch, hold_mismatch or thread_hold_mismatch"
    )
    detail: str


class LedgerVerdict(BaseModel):
    status: Literal["ok", "broken"] = Field(
        description="broken means a problem was found, listed in problems"
    )
    scope: str = Field(description="what the verdict attests and what it does not")
    computed_at: Timestamp | None = Field(
        description="when the sealer computed the verdict; null if the stored time is unreadable",
    )
    stale: bool = Field(
        description="computed_at is more than 3 hours old, unreadable, "
        "or more than 5 minutes in the future"
    )
    head: ChainHead
    sealed: SealedRange
    problems: list[LedgerProblem] = Field(max_length=20, description="at most 20; empty when ok")
    problem_count: int = Field(ge=0, description="true number of problems")


class LedgerUnavailable(BaseModel):
    status: Literal["unavailable"]
    detail: str
