"""The ledger sealer in a loop, in a process of its own with the service's environment:
agent_broker.ledger.sealer.run every interval, with no safety margin (each run seals what
the load just wrote and verifies the whole chain), as the `ledger-seal` job runs it. Being
its own process, it shares no interpreter lock with the load or the server: only the
database and the CPUs. `make bench` compares deals with and without it (bench.sealer);
the soak runs it throughout (bench.soak), through its outages.

    python -m bench.sealer_loop [interval_s] [--through-outages]

With --through-outages a run that meets a database outage (agent_broker.db.outages) is
counted and the loop goes on; any other error ends it. It stops on SIGTERM and prints its
figures as JSON: runs, runs lost to outages, time inside runs and up, the last verdict,
and the error that ended it (or null)."""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from datetime import timedelta
from typing import Any

THROUGH_OUTAGES = "--through-outages"


def sealer_loop(interval_s: float, *, through_outages: bool = False) -> dict[str, Any]:
    from agent_broker import clock
    from agent_broker.config import Settings
    from agent_broker.db import outages
    from agent_broker.db.engine import create_database
    from agent_broker.ledger import sealer

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    db = create_database(Settings(), work="jobs")  # the sealer runs as the job does
    figures: dict[str, Any] = {
        "runs": 0,
        "outage_runs": 0,
        "busy_s": 0.0,
        "verdict": "unknown",
        "error": None,
    }
    started = time.perf_counter()
    try:
        while not stop.is_set():
            began = time.perf_counter()
            try:
                outcome = sealer.run(db.engine, now=clock.now(), margin=timedelta(0))
            except Exception as exc:
                if not through_outages or outages.cause(exc) is None:
                    raise
                figures["outage_runs"] += 1
            else:
                figures["runs"] += 1
                figures["verdict"] = outcome.status
            figures["busy_s"] += time.perf_counter() - began
            stop.wait(interval_s)
    except Exception as exc:  # noqa: BLE001 - reported to the driver
        figures["error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        figures["loop_s"] = time.perf_counter() - started
        db.dispose()
    return figures


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if a != THROUGH_OUTAGES]
    interval = float(arguments[0]) if arguments else 0.5
    print(json.dumps(sealer_loop(interval, through_outages=THROUGH_OUTAGES in sys.argv)))
