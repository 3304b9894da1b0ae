"""Two real `agent-broker serve` processes on one PostgreSQL database never run the same
job at the same time: each claims a job's lease with one conditional update.

Each process is the real serve command (uvicorn, the app, its scheduler thread) with one
extra test-only job registered before it starts: due at every scheduler tick, it writes
its start and end (system-wide monotonic clock) to a shared file and sleeps in between.
The test then checks that no two runs overlap, and that both processes did run it.

The same run checks what the real command logs: JSON lines only, and never a query
string (uvicorn's own access log, which would print it, stays off)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.http import free_port

ROOT = Path(__file__).resolve().parents[2]
RUN_SECONDS = 0.2
WANTED_RUNS = 12
# Each serve process imports the whole app before it listens (seconds of CPU): on a busy
# machine (another test worker, another run) that alone can take most of a minute.
STARTUP_S = 60.0
DEADLINE_S = 25.0  # for the runs, once both serve processes answer
SECRET = "ab_live_5ec7e75ec7e75ec7e75ec7e75ec7e75e"
REQUEST_ID = "two-servers-0001"

SERVE_WITH_TEST_JOB = r"""
import os, sys, time
from datetime import timedelta

from agent_broker.jobs.registry import JOBS, Job

LOG = os.environ["OVERLAP_LOG"]


def _write(line):
    fd = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _record(session, settings, now):
    _write(f"start {os.getpid()} {time.monotonic():.6f}\n")
    time.sleep(float(os.environ["OVERLAP_RUN_SECONDS"]))
    _write(f"end {os.getpid()} {time.monotonic():.6f}\n")
    return "recorded"


JOBS["test-overlap"] = Job("test-overlap", timedelta(0), _record, "test only")

from agent_broker.cli import main

sys.argv = ["agent-broker", "serve", "--port", sys.argv[1], "--no-migrate"]
main()
"""


def _healthy(port: int, path: str = "/health", headers: dict | None = None) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", path, headers=headers or {})
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _runs(log: Path) -> list[tuple[float, float, int]]:
    """Completed runs as (start, end, pid), in order of start."""
    starts: dict[int, float] = {}
    runs = []
    if not log.exists():
        return runs
    for line in log.read_text().splitlines():
        kind, pid, moment = line.split()
        if kind == "start":
            assert int(pid) not in starts, "a process started the job twice at once"
            starts[int(pid)] = float(moment)
        else:
            runs.append((starts.pop(int(pid)), float(moment), int(pid)))
    return sorted(runs)


def test_two_serve_processes_never_run_one_job_at_the_same_time(pg_database, tmp_path):
    log = tmp_path / "runs.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
    env.update(
        BROKER_DATABASE_URL=pg_database,
        BROKER_KEY_HASH_SECRET="test-key-hash-secret-0123456789abcdef",
        BROKER_SIGNING_KEY="5" * 64,
        BROKER_VAR_DIR=str(tmp_path / "var"),
        BROKER_JOBS_ENABLED="true",
        BROKER_JOBS_TICK_SECONDS="0.05",
        BROKER_LOG_LEVEL="INFO",
        OVERLAP_LOG=str(log),
        OVERLAP_RUN_SECONDS=str(RUN_SECONDS),
    )
    ports = [free_port(), free_port()]
    servers = []
    try:
        for index, port in enumerate(ports):
            output = (tmp_path / f"server{index}.log").open("wb")
            servers.append(
                subprocess.Popen(
                    [sys.executable, "-c", SERVE_WITH_TEST_JOB, str(port)],
                    cwd=ROOT,
                    env=env,
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            )
        deadline = time.monotonic() + STARTUP_S
        while not all(_healthy(port) for port in ports):
            if time.monotonic() > deadline or any(s.poll() is not None for s in servers):
                pytest.fail("servers did not start:\n" + _output(tmp_path))
            time.sleep(0.1)
        deadline = time.monotonic() + DEADLINE_S
        assert _healthy(ports[0], f"/health?api_key={SECRET}", {"X-Request-ID": REQUEST_ID})
        pids = {server.pid for server in servers}
        while True:
            runs = _runs(log)
            if len(runs) >= WANTED_RUNS and {pid for *_, pid in runs} == pids:
                break
            if time.monotonic() > deadline:
                pytest.fail(f"only {len(runs)} runs by {len({r[2] for r in runs})} processes")
            time.sleep(0.1)
    finally:
        for server in servers:
            if server.poll() is None:
                server.send_signal(signal.SIGTERM)
        for server in servers:
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()

    runs = _runs(log)
    for (_, previous_end, previous_pid), (start, _, pid) in zip(runs, runs[1:], strict=False):
        assert start >= previous_end, f"run by {pid} started while {previous_pid}'s was running"
    # Both took turns, so the lease was really contended.
    assert {pid for *_, pid in runs} == pids

    lines = (tmp_path / "server0.log").read_text().splitlines()
    assert SECRET not in "\n".join(lines)
    events = [json.loads(line) for line in lines]  # every line is one JSON object
    [access] = [e for e in events if e.get("request_id") == REQUEST_ID]
    assert (access["event"], access["route"], access["status"]) == ("request", "/health", 200)


def _output(tmp_path: Path) -> str:
    return "\n".join(
        path.read_text(errors="replace")[-3000:] for path in sorted(tmp_path.glob("server*.log"))
    )
