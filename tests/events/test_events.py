"""GET /v1/events and GET /v1/events/stream: an account's own events, the webhook bodies,
with or without a webhook endpoint; long-poll, Server-Sent Events resumed with
Last-Event-ID, two servers on one database, retention."""

from __future__ import annotations

import json
import threading
import time
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from agent_broker import clock
from agent_broker.webhooks import repository
from agent_broker.webhooks.models import AccountEvent, WebhookEvent
from tests.support.accounts import balance, register
from tests.support.events import event_stream
from tests.support.http import assert_problem, serving
from tests.support.jobs import run
from tests.support.market import close, offer, open_thread
from tests.support.webhooks import set_endpoint

THREAD_FIELDS = {"thread_id", "listing_id", "status", "turn", "diff", "price_micro", "expires_at"}


def _events(client, agent, **params) -> dict:
    response = client.get("/v1/events", params=params, headers=agent.headers)
    assert response.status_code == 200, response.text
    return response.json()


def _written(client, agent, **params) -> dict:
    """The events once written ones are readable: a long-poll, since on PostgreSQL an event
    waits for every older writing transaction of the server (another test's, say) to end."""
    return _events(client, agent, wait=10, **params)


def test_events_reach_an_account_with_no_webhook(client, market):
    before = balance(client, market.poster)
    assert _events(client, market.poster) == {"events": [], "next": None}
    thread = open_thread(client, market.opener, market.listing_id).json()
    assert offer(client, market.poster, thread["id"], "3 days").status_code == 200

    page = _written(client, market.poster)
    assert [e["type"] for e in page["events"]] == ["thread.opened"]
    opened = page["events"][0]
    assert set(opened) == {"id", "type", "timestamp", "data"}
    assert opened["id"].startswith("msg_") and page["next"] == opened["id"]
    assert opened["data"]["thread_id"] == thread["id"]
    # The counterparty is not named in what the poster is told before a seal.
    assert set(opened["data"]) == THREAD_FIELDS
    assert market.opener.account_id not in json.dumps(opened)
    # The opener's side: the poster's offer, nothing of the poster's own events.
    mine = _written(client, market.opener)
    assert [e["type"] for e in mine["events"]] == ["thread.offer"]
    # Reading on from `next`: nothing new, and the cursor stays.
    assert _events(client, market.poster, after=page["next"]) == {
        "events": [],
        "next": page["next"],
    }
    assert balance(client, market.poster) == before  # free


def test_pages_are_bounded_and_read_on_in_order(client, market):
    thread = open_thread(client, market.opener, market.listing_id).json()
    for round_ in range(3):
        assert offer(client, market.poster, thread["id"], f"p{round_}").status_code == 200
        assert offer(client, market.opener, thread["id"], f"o{round_}").status_code == 200
    seen, cursor = [], None
    while True:
        params = {"limit": 2} | ({"after": cursor} if cursor else {"wait": 10})
        page = _events(client, market.poster, **params)
        assert len(page["events"]) <= 2
        if not page["events"]:
            break
        seen += page["events"]
        cursor = page["next"]
    assert [e["type"] for e in seen] == ["thread.opened"] + ["thread.offer"] * 3
    assert [e["data"]["diff"] for e in seen[1:]] == ["o0", "o1", "o2"]


def test_the_webhook_copy_carries_the_same_id(app, client, market):
    set_endpoint(client, market.poster)
    open_thread(client, market.opener, market.listing_id)
    logged = _written(client, market.poster)["events"]
    with app.state.context.db.reader() as session:
        outbox = session.scalars(
            select(WebhookEvent.id).where(WebhookEvent.account_id == market.poster.account_id)
        ).all()
    assert [e["id"] for e in logged] == list(outbox)


def test_a_cursor_that_is_not_one_of_your_events_is_refused(client, market):
    open_thread(client, market.opener, market.listing_id)
    poster_event = _written(client, market.poster)["events"][0]["id"]
    for cursor in (poster_event, "msg_0000", "x" * 40):
        response = client.get("/v1/events", params={"after": cursor}, headers=market.opener.headers)
        assert_problem(response, 400, "invalid_input")
        stream = client.get(
            "/v1/events/stream", headers={**market.opener.headers, "Last-Event-ID": cursor}
        )
        assert_problem(stream, 400, "invalid_input")


@pytest.mark.parametrize(
    "params", [{"wait": 26}, {"wait": -1}, {"limit": 0}, {"limit": 101}, {"after": "x" * 41}]
)
def test_out_of_range_parameters_are_refused(client, params):
    agent = register(client)
    response = client.get("/v1/events", params=params, headers=agent.headers)
    assert_problem(response, 400, "invalid_input")


def test_events_need_a_key(client):
    assert_problem(client.get("/v1/events"), 401, "unauthorized")
    assert_problem(client.get("/v1/events/stream"), 401, "unauthorized")


def test_a_long_poll_answers_as_soon_as_an_event_is_written(live_server, client, market):
    answers: list[tuple[float, dict]] = []

    def wait_for_one() -> None:
        started = time.monotonic()
        response = httpx.get(
            f"{live_server}/v1/events",
            params={"wait": 20},
            headers=market.poster.headers,
            timeout=30,
        )
        answers.append((time.monotonic() - started, response.json()))

    waiter = threading.Thread(target=wait_for_one)
    waiter.start()
    time.sleep(1.0)
    assert not answers, "the long-poll answered with nothing new"
    with httpx.Client(base_url=live_server, timeout=30) as other:
        opened = open_thread(other, market.opener, market.listing_id)
        assert opened.status_code == 201
    waiter.join(timeout=30)
    took, body = answers[0]
    assert [e["type"] for e in body["events"]] == ["thread.opened"]
    assert took < 10, took


def test_a_long_poll_with_nothing_new_answers_empty_after_the_wait(client):
    agent = register(client)
    started = time.monotonic()
    assert _events(client, agent, wait=1) == {"events": [], "next": None}
    assert time.monotonic() - started >= 0.9


def _read_messages(response: httpx.Response, count: int) -> list[dict[str, str]]:
    """The first `count` messages of an event stream (comments skipped)."""
    messages, fields = [], {}
    for line in response.iter_lines():
        if line == "":
            if "data" in fields:
                messages.append(fields)
                if len(messages) == count:
                    return messages
            fields = {}
        elif not line.startswith(":"):
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")
    raise AssertionError(f"the stream ended after {len(messages)} messages")


def _open_events(base_url: str, agent, count: int, **headers: str) -> tuple[list, threading.Thread]:
    got: list[dict[str, str]] = []

    def read() -> None:
        with event_stream(base_url, agent, **headers) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            got.extend(_read_messages(response, count))

    reader = threading.Thread(target=read)
    reader.start()
    return got, reader


def test_the_stream_sends_each_event_and_resumes_after_last_event_id(live_server, market):
    with httpx.Client(base_url=live_server, timeout=30) as http:
        thread = open_thread(http, market.opener, market.listing_id).json()
        got, reader = _open_events(live_server, market.poster, 2)
        time.sleep(0.5)
        assert offer(http, market.poster, thread["id"], "mine").status_code == 200
        assert offer(http, market.opener, thread["id"], "second").status_code == 200
        reader.join(timeout=30)
        assert [m["event"] for m in got] == ["thread.opened", "thread.offer"]
        body = json.loads(got[1]["data"])
        assert body["type"] == "thread.offer" and body["data"]["diff"] == "second"
        assert set(body) == {"type", "timestamp", "data"}  # the webhook body, as sent

        # Reconnecting with the last id seen: only what came after it.
        assert close(http, market.opener, thread["id"]).status_code == 200
        again, reader = _open_events(
            live_server, market.poster, 1, **{"Last-Event-ID": got[0]["id"]}
        )
        reader.join(timeout=30)
        assert [m["id"] for m in again] == [got[1]["id"]]


def test_an_event_written_through_one_server_reaches_a_stream_on_another(make_app, market, app):
    """Two apps on one database stand for two workers: nothing but the database links them."""
    second = make_app()
    with serving(app) as (first_url, _), serving(second) as (second_url, _):
        got, reader = _open_events(second_url, market.poster, 1)
        time.sleep(0.5)
        with httpx.Client(base_url=first_url, timeout=30) as http:
            assert open_thread(http, market.opener, market.listing_id).status_code == 201
        reader.join(timeout=30)
    assert [m["event"] for m in got] == ["thread.opened"]


def test_events_past_their_retention_are_forgotten(app, client, market):
    open_thread(client, market.opener, market.listing_id)
    hours = app.state.context.settings.event_retention_hours
    clock.advance(timedelta(hours=hours - 1))
    assert run(app, "forget-events") == "forgot 0 events past their retention"
    clock.advance(timedelta(hours=2))
    assert run(app, "forget-events") == "forgot 1 events past their retention"
    with app.state.context.db.reader() as session:
        assert session.scalars(select(AccountEvent)).all() == []
    assert _events(client, market.poster)["events"] == []


def test_a_reader_never_passes_an_event_still_being_written(app, client):
    """PostgreSQL hands out positions when rows are written, not when they commit: an
    event written later may commit first. A reader that moved its cursor past it would
    skip the earlier one for good; so an event is read only once every transaction older
    than its own has ended (SQLite's writers take turns, so there order is commit order)."""
    db = app.state.context.db
    if db.engine.dialect.name != "postgresql":
        pytest.skip("SQLite commits in the order it writes")
    agent = register(client)
    now = clock.now()

    def write(session, event_id: str) -> None:
        repository.log_event(
            session,
            event_ids={agent.account_id: event_id},
            event_type="thread.offer",
            payload="{}",
            now=now,
        )
        session.execute(select(1))  # sent now, even where a write waits for the next statement

    def readable() -> list[str]:
        with db.reader() as session:
            return [row.id for row in repository.logged_after(session, agent.account_id, 0, 10)]

    with db.writer() as earlier:
        write(earlier, "msg_earlier")
        with db.writer() as later:
            write(later, "msg_later")
            later.commit()
        assert readable() == []  # "later" committed, but "earlier" is still in flight
        earlier.commit()
    assert readable() == ["msg_earlier", "msg_later"]
