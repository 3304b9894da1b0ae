"""A TCP port on 127.0.0.1 that forwards to a database server and can be cut and opened
again: what a client sees of a server that goes away and comes back (refused
connections, and open ones closed under it)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from urllib.parse import urlsplit

from tests.support.http import free_port


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    for end in (source, sink):
        with suppress(OSError):
            end.shutdown(socket.SHUT_RDWR)


class Forwarder:
    """Closed until `open()`; `cut()` refuses new connections and closes the open ones."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._connections: list[socket.socket] = []
        self._timers: list[threading.Timer] = []

    def open(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        with self._lock:
            self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def open_after(self, seconds: float) -> threading.Timer:
        timer = threading.Timer(seconds, self.open)
        timer.daemon = True
        self._timers.append(timer)
        timer.start()
        return timer

    def _accept(self, listener: socket.socket) -> None:
        with suppress(OSError):
            while True:
                client, _ = listener.accept()
                server = socket.create_connection(self.target)
                with self._lock:
                    self._connections += [client, server]
                threading.Thread(target=_pump, args=(client, server), daemon=True).start()
                threading.Thread(target=_pump, args=(server, client), daemon=True).start()

    def cut(self) -> None:
        for timer in self._timers:
            timer.cancel()
        with self._lock:
            ends = ([self._listener] if self._listener else []) + self._connections
            self._listener, self._connections = None, []
        for end in ends:
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            with suppress(OSError):
                end.close()


def url_through(database_url: str, forwarder: Forwarder) -> str:
    """`database_url` with its host and port replaced by the forwarder's."""
    address = urlsplit(database_url)
    credentials = address.netloc.rsplit("@", 1)[0] + "@" if "@" in address.netloc else ""
    return database_url.replace(address.netloc, f"{credentials}127.0.0.1:{forwarder.port}", 1)


@contextmanager
def forwarding(database_url: str) -> Iterator[Forwarder]:
    """A closed forwarder to `database_url`'s server, cut when done."""
    address = urlsplit(database_url)
    forwarder = Forwarder((address.hostname or "127.0.0.1", address.port or 5432))
    try:
        yield forwarder
    finally:
        forwarder.cut()
