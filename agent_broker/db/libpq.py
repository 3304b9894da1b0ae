"""Prepared statements on PostgreSQL through psycopg's libpq wrapper (psycopg.pq).

A statement run through a psycopg cursor costs its caller about 70 µs of CPU, of which
about 30 µs is the cursor's Python (its query conversion, prepared-statement bookkeeping
and result object) and the rest the send, the wait and the receive. Here the statement
goes to libpq directly: the values are dumped and the rows loaded by psycopg's own
Transformer with the connection's adapters, as the cursor would, and the statement is
prepared on the server under a name this module keeps per connection. Everything goes in
one pipeline flush: the BEGIN that starts the transaction (which psycopg would send as a
round trip of its own), the statement's PREPARE the first time the connection sees it,
the statements queued before it (Prepared.queue: those whose outcome nobody reads;
Prepared.later: reads whose rows are read from this round trip), and the statement; the
COMMIT goes with the statements queued last.
docs/decisions/performance-8-prepared-statements.md has the measurements.

The connection stays a psycopg connection in the same state psycopg left it in: libpq's
transaction status is what psycopg reads, so its commit, rollback and ORM statements go on
in the transaction begun here.

The wait for the server is bounded (bound_waits, set when the connection opens from
BROKER_DB_STATEMENT_TIMEOUT_MS): the server cancels each statement that runs longer, so a
round trip of n statements is answered within n times that, or the server is not doing
its part (a hung server, a lost network, a wait no server timeout covers). Past that bound
plus a margin the statement is cancelled and the connection closed, so the pool drops it
rather than reuse a connection out of step with the server, and WaitExpired is raised.
Under inline dispatch this wait runs on the worker's event loop: unbounded, one stalled
server would stall every request of the worker."""

from __future__ import annotations

import contextlib
import select
import time
import weakref
from typing import Any

import psycopg
from psycopg import errors, pq
from psycopg.adapt import PyFormat, Transformer

_IDLE = pq.TransactionStatus.IDLE
_FATAL = pq.ExecStatus.FATAL_ERROR
_ABORTED = pq.ExecStatus.PIPELINE_ABORTED
_SYNC = pq.ExecStatus.PIPELINE_SYNC
_TEXT = PyFormat.TEXT

# How much longer than the server's own limits a round trip is waited for: time for the
# server's cancellation to reach the client.
WAIT_MARGIN_S = 1.0
# How long the cancel request sent on giving up may take (it opens a connection of its own).
CANCEL_WAIT_S = 1.0
# _wait's budget when it is to be read off the deadline.
_FROM_DEADLINE = -1.0


class WaitExpired(psycopg.OperationalError):
    """The server did not answer within the bound; the connection was closed."""


# A statement as queued: its SQL, its values (not yet dumped), and a list to append its
# rows to (as one list of tuples) once they have come back, or None for a statement whose
# outcome nobody reads.
Statement = tuple[bytes, list[Any], list[list[tuple]] | None]


class Channel:
    """What this module keeps per psycopg connection: its statement names and the
    Transformer that converts values with the connection's adapters."""

    __slots__ = (
        "connection",
        "pgconn",
        "transformer",
        "names",
        "counter",
        "statement_wait",
        "readable",
        "sendable",
        "__weakref__",
    )

    def __init__(self, connection: psycopg.Connection) -> None:
        self.connection = connection
        self.pgconn = connection.pgconn
        self.transformer = Transformer(connection)
        # Statement SQL -> the name it is prepared under on this connection's server session.
        self.names: dict[bytes, bytes] = {}
        self.counter = 0
        # The server's statement timeout in seconds (bound_waits); None: waits unbounded.
        self.statement_wait: float | None = None
        # Waits on the socket: poll() costs less than select() and takes any descriptor.
        self.readable = select.poll()
        self.readable.register(self.pgconn.socket, select.POLLIN)
        self.sendable = select.poll()
        self.sendable.register(self.pgconn.socket, select.POLLIN | select.POLLOUT)


_channels: weakref.WeakKeyDictionary[Any, Channel] = weakref.WeakKeyDictionary()


def channel(connection: psycopg.Connection) -> Channel:
    found = _channels.get(connection)
    if found is None:
        found = _channels[connection] = Channel(connection)
    return found


def bound_waits(connection: psycopg.Connection, statement_timeout_s: float | None) -> None:
    """Bound this connection's waits for the server by its statement timeout (seconds, as
    set on the server session; None or 0: no bound)."""
    channel(connection).statement_wait = statement_timeout_s or None


def run(
    connection: psycopg.Connection, queued: list[Statement], sql: bytes, args: list[Any]
) -> tuple[int, list[tuple]]:
    """Run the statements `queued` (emptied) and then this one in the connection's
    transaction, begun if need be: this one's changed-row count and its rows as tuples."""
    found = channel(connection)
    queued.append((sql, args, None))
    result = _round_trip(found, queued, None)
    assert result is not None
    rowcount = result.command_tuples
    return (rowcount if rowcount is not None else -1), _rows(found, result)


def _rows(found: Channel, result: pq.PGresult) -> list[tuple]:
    if not result.ntuples:
        return []
    transformer = found.transformer
    transformer.set_pgresult(result)
    return transformer.load_rows(0, result.ntuples, tuple)


def send(connection: psycopg.Connection, queued: list[Statement]) -> None:
    """Run the statements `queued` (emptied), if any, in the connection's transaction."""
    if queued:
        _round_trip(channel(connection), queued, None)


def commit(connection: psycopg.Connection, queued: list[Statement]) -> None:
    """Run the statements `queued` (emptied) and commit, in one round trip."""
    found = channel(connection)
    if queued or found.pgconn.transaction_status != _IDLE:
        _round_trip(found, queued, b"COMMIT")


def _round_trip(
    found: Channel, statements: list[Statement], command: bytes | None
) -> pq.PGresult | None:
    """BEGIN if need be, `statements` (emptied) and `command`, in one pipeline: the result
    of the last statement; the first error met is raised."""
    pgconn = found.pgconn
    dump = found.transformer.dump_sequence
    # Dumped before anything is sent: a value psycopg cannot adapt fails here, with the
    # connection as it was.
    sending = [
        (sql, dump(args, [_TEXT] * len(args)) if args else None, rows)
        for sql, args, rows in statements
    ]
    statements.clear()
    # What each result read back answers, in the order sent: a PREPARE's (sql, name), a
    # statement's list for its rows, or None (BEGIN, the command, a statement not read).
    sent: list[tuple[bytes, bytes] | list[list[tuple]] | None] = []
    pgconn.enter_pipeline_mode()
    try:
        if pgconn.transaction_status == _IDLE:
            pgconn.send_query_params(b"BEGIN", None)
            sent.append(None)
        for sql, values, rows in sending:
            name = found.names.get(sql)
            if name is None:
                found.counter += 1
                name = b"ab_%d" % found.counter
                pgconn.send_prepare(name, sql)
                sent.append((sql, name))
            pgconn.send_query_prepared(name, values)
            sent.append(rows)
        if command is not None:
            pgconn.send_query_params(command, None)
            sent.append(None)
        pgconn.pipeline_sync()
        # Each statement has the server's statement timeout to itself (BEGIN and a PREPARE
        # take none to speak of): the answer to all of them is due within their sum.
        results = _exchange(found, len(sending) + (command is not None))
    finally:
        _leave_pipeline(found)
    failed = None
    for answers, result in zip(sent, results, strict=True):
        status = result.status
        if status == _FATAL:
            failed = failed or result
        elif answers is None or status == _ABORTED:
            continue
        elif isinstance(answers, list):
            answers.append(_rows(found, result))
        else:
            # Named statements are not transactional: this one stays prepared even if a
            # later statement fails and the transaction rolls back.
            found.names[answers[0]] = answers[1]
    if failed is not None:
        error = errors.error_from_result(failed, encoding=found.connection.info.encoding)
        if isinstance(error, errors.InvalidSqlStatementName):
            # Something deallocated this session's statements (DISCARD ALL...): this
            # transaction fails, and the next prepares them again.
            found.names.clear()
        raise error
    return results[-1] if command is None and sending else None


def _exchange(found: Channel, statements: int) -> list[pq.PGresult]:
    """Flush the pipeline and read its results up to its sync point, within the
    connection's bound for that many statements."""
    pgconn = found.pgconn
    deadline = 0.0
    budget_ms: float | None = None  # None: no bound
    if found.statement_wait is not None:
        allowed = WAIT_MARGIN_S + found.statement_wait * max(1, statements)
        deadline = time.monotonic() + allowed
        budget_ms = allowed * 1000
    while pgconn.flush():
        budget_ms = _wait(found, found.sendable, budget_ms, deadline)
        pgconn.consume_input()
    results: list[pq.PGresult] = []
    while True:
        while pgconn.is_busy():
            budget_ms = _wait(found, found.readable, budget_ms, deadline)
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            continue  # the end of one statement's results
        if result.status == _SYNC:
            return results
        results.append(result)


def _wait(found: Channel, poller: Any, budget_ms: float | None, deadline: float) -> float | None:
    """Until the socket is ready as `poller` asks, for at most `budget_ms` (None: no
    bound); what the next wait may take. The first wait of a round trip takes the whole
    budget without reading the clock: the first reading after a wait costs more than the
    rest of this bookkeeping (over a microsecond, measured)."""
    if budget_ms is None:
        poller.poll()
        return None
    if budget_ms == _FROM_DEADLINE:
        budget_ms = (deadline - time.monotonic()) * 1000
    if budget_ms > 0 and poller.poll(budget_ms):
        return _FROM_DEADLINE
    _give_up(found)
    return None  # not reached: _give_up raises


def _give_up(found: Channel) -> None:
    """Cancel what the server is running for this connection (so it lets go of the locks
    the transaction holds without waiting for its own timeout, if it has one), close the
    connection, and raise WaitExpired."""
    connection = found.connection
    # The connection is closed whether or not the cancel got through.
    with contextlib.suppress(Exception):
        connection.cancel_safe(timeout=CANCEL_WAIT_S)
    connection.close()
    raise WaitExpired("the database did not answer in time; its connection was closed")


def _leave_pipeline(found: Channel) -> None:
    try:
        found.pgconn.exit_pipeline_mode()
    except psycopg.Error:
        # Results left unread (the exchange broke off): the connection cannot be trusted
        # to be in step with the server, so it is closed and the pool drops it.
        found.connection.close()
