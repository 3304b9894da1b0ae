"""The service under soak: a throwaway PostgreSQL database, migrated by `agent-broker db
upgrade` (as deploy/compose.yaml's one-shot migration does), then `agent-broker serve
--workers N --no-migrate` on a free loopback port with shared rate limits in Redis.

Workers are the serve process's children started by multiprocessing's spawn (its
resource tracker is a child too, and is never a worker)."""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.server import BIN, HOST, ROOT, ServerError, free_port, migrate

STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 20.0
# Every client comes from 127.0.0.1, so per-source and per-account limits are lifted (a
# short window keeps the Redis entries of a moving window few and short-lived).
UNLIMITED = "100000/minute"
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Broker:
    host: str
    port: int
    workers: int
    process: subprocess.Popen[bytes]
    env: dict[str, str]  # the service's environment, for the CLI commands run against it
    log_path: Path

    def worker_pids(self) -> list[int]:
        return worker_pids(self.process.pid)

    def running(self) -> bool:
        return self.process.poll() is None

    def healthy(self) -> bool:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=5)
        try:
            conn.request("GET", "/health")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`agent-broker ARGS` against the same database and settings."""
        return subprocess.run(
            [str(BIN / "agent-broker"), *args],
            env=self.env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )

    def logged_errors(self) -> list[str]:
        """What the service logged at error level, counted by kind (ids in paths folded),
        each with the last line of its last traceback; lines that are not JSON as such."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        kinds: Counter[str] = Counter()
        last_line: dict[str, str] = {}
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                kinds[f"not JSON: {line[:200]}"] += 1
                continue
            if event.get("level") not in ("error", "critical"):
                continue
            path = _ID.sub("{id}", str(event.get("path", "")))
            kind = f"{event.get('event', '')!s:.60} {event.get('error_type', '')} {path}".strip()
            kinds[kind] += 1
            if trace := event.get("exception"):
                last_line[kind] = trace.strip().splitlines()[-1][:300]
        return [
            f"{count} x {kind}" + (f" ({last_line[kind]})" if kind in last_line else "")
            for kind, count in kinds.most_common()
        ]


def worker_pids(parent: int) -> list[int]:
    """Children of `parent` that multiprocessing spawned to serve (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # Field 4 of stat(5) is the parent pid; the command name before it may hold spaces.
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid == parent and b"spawn_main" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except (OSError, IndexError, ValueError):
            continue  # exited while we looked
    return sorted(found)


@contextmanager
def postgres_database(admin_dsn: str) -> Iterator[str]:
    """A new database with a random name on the server `admin_dsn` reaches; its SQLAlchemy
    URL. Dropped afterwards, connections and all."""
    name = f"broker_soak_{secrets.token_hex(6)}"
    with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base = admin_dsn.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1)
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(admin_dsn, autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def environment(workdir: Path, database_url: str, redis_url: str, port: int) -> dict[str, str]:
    # The caller's BROKER_* settings are dropped so every run is alike.
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
    env.update(
        BROKER_ENV="staging",
        BROKER_DATABASE_URL=database_url,
        BROKER_REDIS_URL=redis_url,
        BROKER_PUBLIC_BASE_URL=f"http://{HOST}:{port}",
        BROKER_KEY_HASH_SECRET=secrets.token_hex(32),
        # One key for every worker, as replicas must share it (an Ed25519 seed is any 32
        # random bytes).
        BROKER_SIGNING_KEY=secrets.token_hex(32),
        BROKER_VAR_DIR=str(workdir / "var"),
        BROKER_REGISTER_RATE_LIMIT=UNLIMITED,
        BROKER_VIOLATION_LIMIT=UNLIMITED,
        # Jobs run inside the workers being killed, so their leases are exercised too.
        BROKER_JOBS_ENABLED="true",
        BROKER_JOBS_TICK_SECONDS="1",
        BROKER_LOG_LEVEL="WARNING",
    )
    return env


@contextmanager
def running_broker(
    workdir: Path, database_url: str, redis_url: str, workers: int
) -> Iterator[Broker]:
    """Migrate, serve, and yield once /health answers and every worker is up; stop after."""
    port = free_port()
    env = environment(workdir, database_url, redis_url, port)
    migrate(env)
    command = [str(BIN / "agent-broker"), "serve", "--host", HOST, "--port", str(port)]
    command += ["--workers", str(workers), "--no-migrate"]
    log_path = workdir / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)
    broker = Broker(HOST, port, workers, process, env, log_path)
    try:
        _wait_until_serving(broker)
        yield broker
    finally:
        _stop(broker)


def _wait_until_serving(broker: Broker) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    # One worker is served in the serve process itself, with no supervisor.
    children = broker.workers if broker.workers > 1 else 0
    while not (broker.healthy() and len(broker.worker_pids()) == children):
        if not broker.running():
            raise ServerError(f"serve exited with status {broker.process.returncode}")
        if time.monotonic() > deadline:
            raise ServerError(f"serve was not up within {STARTUP_TIMEOUT_S:.0f} s")
        time.sleep(0.2)


def _stop(broker: Broker) -> None:
    if not broker.running():
        return
    broker.process.terminate()  # uvicorn's supervisor stops its workers on SIGTERM
    try:
        broker.process.wait(STOP_TIMEOUT_S)
        return
    except subprocess.TimeoutExpired:
        pass
    workers = [(pid, _start_time(pid)) for pid in broker.worker_pids()]
    broker.process.kill()
    broker.process.wait()
    for pid, started in workers:
        # The same process still (a pid can be reused once its owner exits).
        if started is not None and _start_time(pid) == started:
            os.kill(pid, signal.SIGKILL)


def _start_time(pid: int) -> int | None:
    """When the process started (stat(5) field 22, in clock ticks), or None if it is gone."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None
