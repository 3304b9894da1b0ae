"""The ledger sealer running throughout the soak, in a process of its own with the
service's environment: agent_broker.ledger.sealer.run in a loop (every interval, with no
safety margin, so each run seals what the load just wrote and verifies the whole chain),
as the `ledger-seal` job runs it. A run that meets a database outage
(agent_broker.db.outages) is counted and the loop goes on; any other error ends it.

    python -m bench.soak_sealer [interval_s]

It stops on SIGTERM and prints its figures as JSON: runs, runs lost to outages, the last
verdict, and the error that ended it (or null)."""

from __future__ import annotations

import json
import signal
import sys
import threading
from datetime import timedelta
from typing import Any


def sealer_loop(interval_s: float) -> dict[str, Any]:
    from agent_broker import clock
    from agent_broker.config import Settings
    from agent_broker.db import outages
    from agent_broker.db.engine import create_database
    from agent_broker.ledger import sealer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    db = create_database(Settings(), work="jobs")
    figures: dict[str, Any] = {"runs": 0, "outage_runs": 0, "verdict": "unknown", "error": None}
    try:
        while not stop.is_set():
            try:
                outcome = sealer.run(db.engine, now=clock.now(), margin=timedelta(0))
            except Exception as exc:
                if outages.cause(exc) is None:
                    raise
                figures["outage_runs"] += 1
            else:
                figures["runs"] += 1
                figures["verdict"] = outcome.status
            stop.wait(interval_s)
    except Exception as exc:  # noqa: BLE001 - reported to the driver
        figures["error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        db.dispose()
    return figures


if __name__ == "__main__":
    print(json.dumps(sealer_loop(float(sys.argv[1]) if len(sys.argv) > 1 else 0.5)))
