"""One account cannot stall `deliver-webhooks` or the jobs after it: a round takes a few of
each account's events, every account's oldest first; a run starts no delivery once its
budget (half the job's lease) is spent, so a run plus the deliveries still in flight ends
within the lease, and the scheduler goes on to the next job.

A slow endpoint is modelled by moving the service clock (which the budget and the lease
both read) on as each of its requests arrives, as if that request took that long; the
real waits stay short."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta

from sqlalchemy import select

from agent_broker import clock
from agent_broker.jobs.models import JobLease
from agent_broker.jobs.registry import JOBS
from agent_broker.jobs.runner import LEASE_TTL, Scheduler
from agent_broker.webhooks import delivery
from agent_broker.webhooks.models import WebhookEvent
from agent_broker.webhooks.service import enqueue
from tests.support.accounts import register
from tests.support.tls import Answer
from tests.support.webhooks import accept, deliver, deliveries, set_endpoint

SLOW, FAST = "/slow", "/fast"
ONE_DELIVERY = timedelta(seconds=delivery.DEADLINE_SECONDS)


def _backlog(app, account_id: str, count: int, *, one_thread: bool = False) -> None:
    """`count` due events for the account, each of its own thread (so all of them are due
    at once), or all of one thread (so each waits for the one before it)."""
    thread = str(uuid.uuid4())
    with app.state.context.db.writer() as session:
        for number in range(count):
            subject = thread if one_thread else str(uuid.uuid4())
            enqueue(
                session,
                account_id,
                "thread.opened",
                subject,
                {"thread_id": subject, "number": number},
                now=clock.now(),
            )
        session.commit()


def _stalling(server, path: str, takes: timedelta, *, real_wait: float = 0.0) -> list[datetime]:
    """`path` answers 204, each request taking `takes` of service time (and `real_wait`
    seconds of real time); returns the service-clock moments its requests arrived at,
    filled as they come."""
    arrivals: list[datetime] = []

    def answer(body: bytes) -> Answer:
        arrivals.append(clock.now())
        clock.advance(takes)
        return Answer(status=204, delay_seconds=real_wait)

    server.answer_with(path, answer)
    return arrivals


def _attempts(app, account_id: str) -> list[int]:
    with app.state.context.db.reader() as session:
        return list(
            session.scalars(
                select(WebhookEvent.attempts)
                .where(WebhookEvent.account_id == account_id)
                .order_by(WebhookEvent.sequence)
            )
        )


def test_a_slow_account_leaves_the_others_their_share_of_a_run(app, client, challenge_server):
    slow, fast = register(client), register(client)
    slow_secret = set_endpoint(client, slow, SLOW)
    fast_secret = set_endpoint(client, fast, FAST)
    # Slower than the fast one in real time too, so the fast one's answers free the gate.
    _stalling(challenge_server, SLOW, timedelta(minutes=1), real_wait=0.05)
    accept(challenge_server, FAST)
    _backlog(app, slow.account_id, 16)  # every one of them older than the fast account's
    _backlog(app, fast.account_id, 3)

    outcome = deliver(app)
    # The fast account's events all went, in the run's first turn, beside the slow one's.
    assert len(deliveries(challenge_server, fast_secret, FAST)) == 3
    # The slow one got a round's share at most, and the run stopped at its budget.
    sent = len(deliveries(challenge_server, slow_secret, SLOW))
    assert 0 < sent <= delivery.PER_ACCOUNT
    assert outcome.endswith(f"stopped at its {delivery.RUN_BUDGET.total_seconds():g} s budget")
    # What was not sent waits with no attempt counted, and the next runs send it, once each.
    assert sorted(_attempts(app, slow.account_id)) == [0] * (16 - sent) + [1] * sent
    for _ in range(16):
        if 0 not in _attempts(app, slow.account_id):
            break
        deliver(app)
    assert _attempts(app, slow.account_id) == [1] * 16
    ids = [e["data"]["thread_id"] for e in deliveries(challenge_server, slow_secret, SLOW)]
    assert len(ids) == len(set(ids)) == 16


def test_a_slow_account_s_backlog_does_not_hold_a_round(app, client, challenge_server):
    slow, fast = register(client), register(client)
    set_endpoint(client, slow, SLOW)
    fast_secret = set_endpoint(client, fast, FAST)
    # Each answer takes the longest a delivery may; all 40 at once would spend the budget.
    _stalling(challenge_server, SLOW, ONE_DELIVERY)
    accept(challenge_server, FAST)
    _backlog(app, slow.account_id, 40)
    _backlog(app, fast.account_id, 3, one_thread=True)  # one round each, in order

    deliver(app)
    # A round takes a share of the slow account's backlog, so the rounds stay short and
    # the fast account's thread goes whole in the same run.
    received = deliveries(challenge_server, fast_secret, FAST)
    assert len(received) == 3
    assert [e["data"]["number"] for e in received] == [0, 1, 2]


def test_a_run_starts_no_delivery_after_its_budget(app, client, challenge_server, monkeypatch):
    # One at a time, so each delivery's start is exactly when the one before it ended.
    monkeypatch.setattr(delivery, "CONCURRENCY", 1)
    slow = register(client)
    set_endpoint(client, slow, SLOW)
    # Every answer takes the longest a delivery may: a run of all 65 would last 650 s.
    arrivals = _stalling(challenge_server, SLOW, ONE_DELIVERY)
    _backlog(app, slow.account_id, 65)
    started = clock.now()

    deliver(app)
    assert arrivals and all(at < started + delivery.RUN_BUDGET for at in arrivals)
    assert len(arrivals) == delivery.RUN_BUDGET // ONE_DELIVERY
    with app.state.context.db.reader() as session:
        lease = session.get(JobLease, "deliver-webhooks")
    # The run (the delivery in flight included) ended while its lease still held.
    assert lease.last_finished_at - lease.last_started_at < LEASE_TTL
    assert delivery.RUN_BUDGET + ONE_DELIVERY < LEASE_TTL


def test_the_scheduler_goes_on_to_the_next_job_within_the_budget(
    app, client, challenge_server, monkeypatch
):
    monkeypatch.setattr(delivery, "CONCURRENCY", 1)
    slow = register(client)
    set_endpoint(client, slow, SLOW)
    _stalling(challenge_server, SLOW, ONE_DELIVERY)
    _backlog(app, slow.account_id, 65)
    names = list(JOBS)
    after = names[names.index("deliver-webhooks") + 1 :]
    assert after, "deliver-webhooks is not the scheduler's last job"
    finished: list[tuple[str, str, datetime]] = []
    last_one_ran = threading.Event()

    def observe(name: str, status: str, seconds: float) -> None:
        finished.append((name, status, clock.now()))
        if name == names[-1]:
            last_one_ran.set()

    scheduler = Scheduler(app.state.context, tick_seconds=0.01, observer=observe)
    scheduler.start()
    try:
        assert last_one_ran.wait(60), finished
    finally:
        scheduler.stop()

    first_pass = finished[: len(names)]
    assert [name for name, _, _ in first_pass] == names
    assert all(status == "ok" for _, status, _ in first_pass), first_pass
    # deliver-webhooks started when the job before it ended, and ended (so the next one
    # started) no later than its budget and the delivery then in flight.
    at = {name: moment for name, _, moment in first_pass}
    webhooks_started = at[names[names.index("deliver-webhooks") - 1]]
    assert at["deliver-webhooks"] - webhooks_started <= delivery.RUN_BUDGET + ONE_DELIVERY


def test_the_run_budget_is_half_the_job_lease():
    # The webhooks package cannot import the jobs above it, so it states the budget itself.
    assert delivery.RUN_BUDGET == LEASE_TTL / 2
