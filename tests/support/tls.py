"""A local HTTPS server with a test CA of its own, for the outbound fetch tests: each path
answers what a test sets (status, headers, body, delay) and every request is recorded."""

from __future__ import annotations

import os
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import trustme


@dataclass
class Answer:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_seconds: float = 0.0
    # Send Content-Length (False: close-delimited body, so no size is declared up front).
    declare_length: bool = True
    # Instead of answering, write bytes that are no valid TLS record on the raw socket: a
    # TLS fault after the handshake, once the request is in.
    break_tls: bool = False


@dataclass
class Seen:
    method: str
    path: str
    host: str | None
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


class TLSServer:
    def __init__(self, httpd: ThreadingHTTPServer, ca_path: Path) -> None:
        self._httpd = httpd
        self.ca_path = ca_path
        self.port = httpd.server_address[1]
        self.answers: dict[str, Answer | list[Answer] | Callable[[bytes], Answer]] = {}
        self.seen: list[Seen] = []
        self.release = threading.Event()  # set by a test to end a held answer early
        self._lock = threading.Lock()

    def answer(self, path: str, answer: Answer) -> None:
        """Answer every request for `path` with `answer`."""
        self.answers[path] = answer

    def answer_in_turn(self, path: str, *answers: Answer) -> None:
        """Answer the requests for `path` with these, one each, in the order they arrive."""
        self.answers[path] = list(answers)

    def answer_with(self, path: str, make: Callable[[bytes], Answer]) -> None:
        """Answer each request for `path` with what `make` returns for its body."""
        self.answers[path] = make

    def next_answer(self, path: str, body: bytes = b"") -> Answer:
        with self._lock:
            planned = self.answers.get(path)
            if callable(planned):
                return planned(body)
            if isinstance(planned, list):
                return planned.pop(0) if planned else Answer(status=410, body=b"used up")
            return planned or Answer(status=404, body=b"no such path")

    def paths_seen(self) -> list[str]:
        return [s.path for s in self.seen]


def _handler(server: TLSServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            answer = server.next_answer(self.path, body)
            server.seen.append(
                Seen(self.command, self.path, self.headers.get("Host"), body, dict(self.headers))
            )
            if answer.delay_seconds:
                server.release.wait(answer.delay_seconds)
            if answer.break_tls:
                os.write(self.connection.fileno(), b"\x17\x03\x03\x00\x10" + b"x" * 16)
                time.sleep(0.5)  # the client reads the bad record before the close
                self.close_connection = True
                return
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if answer.declare_length:
                self.send_header("Content-Length", str(len(answer.body)))
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(answer.body)

        do_GET = do_POST = _serve  # noqa: N815

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # failed handshakes are what several tests provoke on purpose


@contextmanager
def tls_server(tmp_path: Path, *names: str) -> Iterator[TLSServer]:
    """An HTTPS server on 127.0.0.1 whose certificate covers `names`, issued by a fresh CA
    whose PEM is at `server.ca_path`."""
    ca = trustme.CA()
    cert = ca.issue_cert(*names)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    ca_path = tmp_path / f"ca-{time.monotonic_ns()}.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    httpd = _QuietServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    server = TLSServer(httpd, ca_path)
    httpd.RequestHandlerClass = _handler(server)
    # A short poll: shutdown() waits up to one poll interval (0.5 s by default) per test.
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield server
    finally:
        server.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
