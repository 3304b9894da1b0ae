"""SIGKILL one serving worker every few seconds and watch uvicorn's supervisor replace it.

uvicorn 0.54's Multiprocess supervisor checks its workers every 0.5 s and starts a new
one in place of any that died (except one that exited with uvicorn's startup-failure
status, which stops the whole server). The killer relies on that and measures it: after
each kill it waits for a new worker pid and for the pool to be back to N."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from dataclasses import dataclass, field

from bench.soak_server import Broker

REPLACEMENT_DEADLINE_S = 30.0
POLL_S = 0.1


@dataclass(frozen=True)
class Kill:
    pid: int
    at: float  # time.monotonic()
    replaced_after_s: float | None  # None: no replacement within the deadline


@dataclass
class KillLog:
    kills: list[Kill] = field(default_factory=list)

    @property
    def unreplaced(self) -> list[Kill]:
        return [k for k in self.kills if k.replaced_after_s is None]

    def slowest_replacement_s(self) -> float:
        return max((k.replaced_after_s or 0.0 for k in self.kills), default=0.0)

    def near_a_kill(self, moment: float, window_s: float) -> bool:
        """Whether `moment` falls within `window_s` after some kill."""
        return any(0.0 <= moment - k.at <= window_s for k in self.kills)


async def kill_workers(broker: Broker, every_s: float, until: float, log: KillLog) -> None:
    """Kill a random worker every `every_s` seconds until time.monotonic() reaches `until`."""
    rng = random.Random()
    next_kill = time.monotonic() + every_s
    while next_kill < until:
        await asyncio.sleep(max(0.0, next_kill - time.monotonic()))
        before = broker.worker_pids()
        if not before:
            # None alive right now: the supervisor is replacing them; try again shortly.
            next_kill = time.monotonic() + POLL_S
            continue
        victim = rng.choice(before)
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            continue  # it died on its own a moment ago; pick again
        killed_at = time.monotonic()
        log.kills.append(Kill(victim, killed_at, await _replacement(broker, set(before))))
        next_kill = killed_at + every_s


async def _replacement(broker: Broker, before: set[int]) -> float | None:
    """Seconds until a worker that was not in `before` exists and the pool is full again."""
    started = time.monotonic()
    while time.monotonic() - started < REPLACEMENT_DEADLINE_S:
        now = broker.worker_pids()
        if set(now) - before and len(now) == broker.workers:
            return time.monotonic() - started
        await asyncio.sleep(POLL_S)
    return None
