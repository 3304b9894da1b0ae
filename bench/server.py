"""Run the service under test: a fresh SQLite database, migrated with `agent-broker db
upgrade`, served by one uvicorn worker on bench.app (the real app plus the baseline
route). Options mirror what `agent-broker serve` passes to uvicorn."""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The venv's bin directory: `make bench` runs .venv/bin/python.
BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
KEY_HASH_SECRET = "bench-only-key-hash-secret-0123456789abc"  # 40 characters
STARTUP_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


class ServerError(RuntimeError):
    pass


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    pid: int
    command: tuple[str, ...]
    env: dict[str, str]  # the server's environment, for setup steps that seed its database

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the server process so far (Linux only)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        # utime and stime are fields 14 and 15 of stat(5); fields[0] here is field 3.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _environment(workdir: Path, database_url: str | None) -> dict[str, str]:
    # Drop the caller's BROKER_* settings (e.g. a Redis URL) so every run is alike.
    env = {k: v for k, v in os.environ.items() if not k.startswith("BROKER_")}
    env.update(
        BROKER_DATABASE_URL=database_url or f"sqlite:///{workdir / 'bench.db'}",
        BROKER_VAR_DIR=str(workdir / "var"),
        BROKER_KEY_HASH_SECRET=KEY_HASH_SECRET,
        BROKER_JOBS_ENABLED="false",
        # The register scenario creates thousands of accounts from one address.
        BROKER_REGISTER_RATE_LIMIT="1000000/hour",
        BROKER_LOG_LEVEL="WARNING",
    )
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection(HOST, port, timeout=2)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()  # uvicorn shuts down gracefully on SIGTERM
    try:
        proc.wait(STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def running_server(database_url: str | None = None) -> Iterator[Server]:
    """Start the server (on a fresh SQLite file unless `database_url` names another
    database) and yield once /health answers 200; always stop it on exit."""
    with tempfile.TemporaryDirectory(prefix="agent-broker-bench-") as tmp:
        workdir = Path(tmp)
        env = _environment(workdir, database_url)
        migrate = subprocess.run(
            [str(BIN / "agent-broker"), "db", "upgrade"],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if migrate.returncode != 0:
            raise ServerError(f"agent-broker db upgrade failed:\n{migrate.stderr.strip()}")

        port = _free_port()
        command = (
            *(sys.executable, "-m", "uvicorn", "bench.app:app_factory", "--factory"),
            *("--app-dir", str(ROOT), "--host", HOST, "--port", str(port), "--workers", "1"),
            *("--no-access-log", "--no-proxy-headers", "--log-level", "warning"),
        )
        log_path = workdir / "server.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(command, env=env, cwd=ROOT, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while not _healthy(port):
                if proc.poll() is not None:
                    raise ServerError(f"server exited with status {proc.returncode}")
                if time.monotonic() > deadline:
                    raise ServerError(f"/health did not answer 200 in {STARTUP_TIMEOUT_S:.0f} s")
                time.sleep(0.1)
            yield Server(HOST, port, proc.pid, command, env)
        finally:
            _stop(proc)
            # Why it failed to start, or warnings it logged during the run.
            if tail := _tail(log_path):
                print(f"--- server log (last lines) ---\n{tail}", file=sys.stderr)
