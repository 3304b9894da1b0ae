"""The processes under test, each in a fresh temporary directory and on a free port:

- running_bare: the baseline app (bench.bare) under its own uvicorn;
- running_server: the service, `agent_broker.app:app_factory` as `agent-broker serve` builds
  it, under one uvicorn worker, on a fresh SQLite database migrated with `agent-broker db
  upgrade` (or on another database URL);
- running_cli: the real `agent-broker serve --workers N` (it migrates first).

The uvicorn options are those `agent-broker serve` passes: no proxy headers, no access log,
log level warning, the HTTP parser as uvicorn picks (httptools here). The event loop of the
one-worker service is the one `agent-broker serve --workers 1` picks (asyncio's: see
agent_broker.cli.event_loop_for); the bare baseline keeps uvicorn's pick (uvloop here),
which serves it faster, so the service's ratios to it are not flattered."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent_broker.cli import event_loop_for

ROOT = Path(__file__).resolve().parent.parent
# The venv's bin directory: `make bench` runs .venv/bin/python.
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
KEY_HASH_SECRET = "bench-only-key-hash-secret-0123456789abc"  # 40 characters
# Far above anything the benchmark does from its one address; never the service default.
GENEROUS_RATE_LIMIT = "100000000/hour"
STARTUP_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 15.0
UVICORN_OPTIONS = ("--no-access-log", "--no-proxy-headers", "--log-level", "warning")


class ServerError(RuntimeError):
    pass


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    pid: int  # the serving process when workers == 1, else uvicorn's supervisor
    command: tuple[str, ...]
    env: dict[str, str]  # the server's environment, for setup steps that seed its database
    workers: int = 1

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the server process so far (Linux only)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        # utime and stime are fields 14 and 15 of stat(5); fields[0] here is field 3.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_bytes(self, field: str = "VmRSS") -> int | None:
        """Resident memory of the server process: VmRSS in /proc/PID/status, or another of
        its kB fields (RssAnon: the process's own memory, without mapped files)."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024  # reported in kB
        return None


def service_environment(
    workdir: Path, database_url: str | None, redis_url: str | None = None
) -> dict[str, str]:
    # Drop the caller's BROKER_* settings (e.g. a Redis URL) so every run is alike.
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
    env.update(
        BROKER_DATABASE_URL=database_url or f"sqlite:///{workdir / 'bench.db'}",
        BROKER_VAR_DIR=str(workdir / "var"),
        BROKER_KEY_HASH_SECRET=KEY_HASH_SECRET,
        BROKER_JOBS_ENABLED="false",
        # The only configurable rate limits (agent_broker.config): registration per address
        # (setup and the register scenario create thousands of accounts from 127.0.0.1)
        # and scanner refusals per account (none expected; raised so a false positive
        # shows as a 422, not as a 429 flood).
        BROKER_REGISTER_RATE_LIMIT=GENEROUS_RATE_LIMIT,
        BROKER_VIOLATION_LIMIT=GENEROUS_RATE_LIMIT,
        BROKER_LOG_LEVEL="WARNING",
    )
    if redis_url:
        env["BROKER_REDIS_URL"] = redis_url
    return env


def migrate(env: dict[str, str]) -> None:
    """`agent-broker db upgrade` with the service's environment."""
    done = subprocess.run(
        [str(BIN / "agent-broker"), "db", "upgrade"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise ServerError(f"agent-broker db upgrade failed:\n{done.stderr.strip()}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _answers(port: int, path: str) -> bool:
    conn = http.client.HTTPConnection(HOST, port, timeout=2)
    try:
        conn.request("GET", path)
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()  # uvicorn (and its supervisor, with workers) stops gracefully on SIGTERM
    try:
        proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        # Started in its own session: the group is this server and its workers only.
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextmanager
def _serving(
    command: Sequence[str], env: dict[str, str], workdir: Path, ready_path: str, workers: int
) -> Iterator[Server]:
    """Start `command`, yield once `ready_path` answers 200, always stop it on exit."""
    port = int(command[command.index("--port") + 1])
    log_path = workdir / "server.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=log, stderr=log, start_new_session=True
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _answers(port, ready_path):
            if proc.poll() is not None:
                raise ServerError(f"{command[0]} exited with status {proc.returncode}")
            if time.monotonic() > deadline:
                raise ServerError(f"{ready_path} did not answer 200 in {STARTUP_TIMEOUT_S:.0f} s")
            time.sleep(0.1)
        yield Server(HOST, port, proc.pid, tuple(command), env, workers)
    finally:
        _stop(proc)
        # Why it failed to start, or warnings it logged during the run.
        if tail := _tail(log_path):
            print(f"--- server log ({' '.join(command[:4])}...; last lines) ---", file=sys.stderr)
            print(tail, file=sys.stderr)


def _uvicorn(app: str, port: int, *options: str) -> tuple[str, ...]:
    return (
        *(sys.executable, "-m", "uvicorn", app, *options, "--app-dir", str(ROOT)),
        *("--host", HOST, "--port", str(port), "--workers", "1", *UVICORN_OPTIONS),
    )


@contextmanager
def running_bare() -> Iterator[Server]:
    """The baseline app alone in its uvicorn process."""
    from bench.bare import PATH

    with tempfile.TemporaryDirectory(prefix="agent-broker-bench-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
        command = _uvicorn("bench.bare:app", free_port())
        with _serving(command, env, Path(tmp), PATH, workers=1) as server:
            yield server


SERVICE_APP = "agent_broker.app:app_factory"


@contextmanager
def running_server(database_url: str | None = None, app: str = SERVICE_APP) -> Iterator[Server]:
    """The service under one uvicorn worker, on a fresh SQLite file unless `database_url`
    names another (already created) database; `app` names another factory of it (a bench
    variant, such as bench.events_log's)."""
    with tempfile.TemporaryDirectory(prefix="agent-broker-bench-") as tmp:
        workdir = Path(tmp)
        env = service_environment(workdir, database_url)
        migrate(env)
        loop = ("--loop", event_loop_for(1))
        command = _uvicorn(app, free_port(), "--factory", *loop)
        with _serving(command, env, workdir, "/health", workers=1) as server:
            yield server


@contextmanager
def running_cli(database_url: str, workers: int, redis_url: str | None) -> Iterator[Server]:
    """`agent-broker serve --workers N` on `database_url` (an empty database: serve
    migrates it), sharing rate limits through `redis_url` when given."""
    with tempfile.TemporaryDirectory(prefix="agent-broker-bench-") as tmp:
        workdir = Path(tmp)
        env = service_environment(workdir, database_url, redis_url)
        command = (
            *(str(BIN / "agent-broker"), "serve", "--workers", str(workers)),
            *("--host", HOST, "--port", str(free_port())),
        )
        with _serving(command, env, workdir, "/health", workers) as server:
            yield server
