"""One deal per listing under any race: finalize on competing threads, and threads opened
while the listing seals, through a real server with concurrent requests. Every loser gets
its refusal, nothing answers 5xx, and holds and balances add up afterwards."""

from __future__ import annotations

from collections import Counter

import httpx
import pytest

from tests.support.accounts import fund
from tests.support.http import new_key
from tests.support.market import DEAL_FEE, FEE
from tests.support.races import all_at_once, racing_app  # noqa: F401 (racing_app: the app fixture)

START = 20_000_000
ROUNDS = 6
COMPETITORS = 4
LATE_OPENERS = 3

LISTING = {
    "title": "Label 5,000 support tickets",
    "category": "classification",
    "listing_type": "sell",
    "price_micro": 3_000_000,
    "body": "Intent and urgency labels, two passes, agreement report included.",
}


def _agent(http: httpx.Client, app, n: int) -> dict[str, str]:
    made = http.post("/v1/account/register", json={"accepted_terms": True}).json()
    headers = {"x-api-key": made["api_key"]}
    http.put(
        "/v1/account/contact",
        json={"contact_name": f"Ops {n}", "contact_email": f"ops{n}@agents.dev"},
        headers=headers,
    ).raise_for_status()
    http.put(
        "/v1/account/route",
        json={"deal_route": f"https://agent{n}.agents.dev/deals/"},
        headers=headers,
    ).raise_for_status()
    fund(app, made["account_id"], START, real_money=True)
    return headers


def _reason(response: httpx.Response) -> str:
    return f"{response.status_code} {response.json().get('reason', '')}"


@pytest.mark.parametrize("concurrency", ["finalize-vs-finalize-and-open"])
def test_exactly_one_deal_per_listing_under_concurrent_finalize_and_open(
    app, live_server, concurrency
):
    with httpx.Client(base_url=live_server, timeout=60) as http:
        poster = _agent(http, app, 0)
        negotiators = [_agent(http, app, i + 1) for i in range(COMPETITORS)]
        late = [_agent(http, app, 100 + i) for i in range(LATE_OPENERS)]
        outcomes: Counter[str] = Counter()

        for _ in range(ROUNDS):
            listing = http.post(
                "/v1/listings",
                json=LISTING,
                headers={**poster, "Idempotency-Key": new_key()},
            )
            assert listing.status_code == 201, listing.text
            listing_id = listing.json()["id"]
            thread_ids = []
            for headers in negotiators:
                opened = http.post(
                    f"/v1/listings/{listing_id}/threads",
                    json={"diff": "Two passes, report included, 5 days."},
                    headers={**headers, "Idempotency-Key": new_key()},
                )
                assert opened.status_code == 201, opened.text
                thread_ids.append(opened.json()["id"])

            def finalize(thread_id, live_server=live_server):
                return lambda c: c.post(
                    f"{live_server}/v1/threads/{thread_id}/finalize",
                    headers={**poster, "Idempotency-Key": new_key()},
                )

            def open_late(headers, listing_id=listing_id):
                return lambda c: c.post(
                    f"{live_server}/v1/listings/{listing_id}/threads",
                    json={"diff": "I can do it in 3 days."},
                    headers={**headers, "Idempotency-Key": new_key()},
                )

            calls = [finalize(t) for t in thread_ids] + [open_late(h) for h in late]
            results = all_at_once(calls)
            finals, opens = results[:COMPETITORS], results[COMPETITORS:]
            for response in results:
                assert response.status_code < 500, response.text
            sealed = [r for r in finals if r.status_code == 201]
            assert len(sealed) == 1, [_reason(r) for r in finals]
            for response in finals:
                if response.status_code != 201:
                    assert _reason(response) == "410 thread_auto_closed", response.text
            for response in opens:
                assert response.status_code in (201, 410), response.text
                if response.status_code == 410:
                    assert response.json()["reason"] == "listing_expired"
            outcomes.update(_reason(r) for r in opens)

            # Every thread on the listing but the sealed one is closed; only one deal.
            inbox = http.get(f"/v1/listings/{listing_id}/threads", headers=poster).json()
            statuses = Counter(t["status"] for t in inbox)
            assert statuses["finalized"] == 1, statuses
            assert statuses["open"] == 0, statuses
            assert http.get(f"/v1/listings/{listing_id}", headers=poster).json()["status"] == (
                "matched"
            )

        # Holds and balances add up: no hold is left, each side paid once per deal won.
        won = Counter()
        for headers in negotiators + late:
            mine = http.get("/v1/threads/mine", headers=headers).json()
            won[headers["x-api-key"]] = sum(1 for t in mine if t["status"] == "finalized")
        assert sum(won.values()) == ROUNDS
        for headers in negotiators + late:
            account = http.get("/v1/account", headers=headers).json()
            assert account["held_micro"] == 0
            assert account["balance_micro"] == START - DEAL_FEE * won[headers["x-api-key"]]
        account = http.get("/v1/account", headers=poster).json()
        assert account["held_micro"] == 0
        assert account["balance_micro"] == START - ROUNDS * (FEE + DEAL_FEE)
