"""The public pages in a real browser (Debian's chromium, driven by Playwright): they
render, the listing table and the chart are there, the API pages list the operations
offline, and no script error or failed request happens on the way."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.support.http import new_key
from tests.support.market import LISTING

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture
def browser():  # type: ignore[no-untyped-def]
    if CHROMIUM is None:
        if os.environ.get("BROKER_TEST_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed (BROKER_TEST_REQUIRE_BROWSER=1)")
        pytest.skip("chromium is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


def _visit(browser, url: str, tmp_path, name: str):  # type: ignore[no-untyped-def]
    page = browser.new_page()  # a browser's, or a context's
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("requestfailed", lambda request: problems.append(f"failed: {request.url}"))
    response = page.goto(url)
    assert response is not None and response.status == 200
    shot = tmp_path / f"{name}.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 1000
    return page, problems


def test_the_pages_render_in_chromium_without_errors(
    app, client, seller, live_server, browser, tmp_path
):
    headers = {**seller.headers, "Idempotency-Key": new_key()}
    listing = client.post("/v1/listings", json=LISTING, headers=headers).json()
    page, problems = _visit(browser, f"{live_server}/market", tmp_path, "market")
    assert page.locator("tr.listing").count() == 1
    assert page.locator("tr.listing td").first.inner_text() == LISTING["title"]
    page, more = _visit(browser, f"{live_server}/market/{listing['poster_id']}", tmp_path, "record")
    assert page.locator("#scores rect").count() == 5
    assert page.locator("h1").inner_text().startswith(listing["poster_id"])
    assert problems + more == []


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_api_pages_render_with_every_other_site_cut_off(live_server, browser, tmp_path):
    """/docs and /redoc as on a machine without internet access: any request for another
    origin is refused (and would show as a failed request)."""
    elsewhere: list[str] = []

    def only_this_service(route):  # type: ignore[no-untyped-def]
        if route.request.url.startswith(live_server + "/"):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    context = browser.new_context()
    context.route("**/*", only_this_service)
    try:
        docs, problems = _visit(context, f"{live_server}/docs", tmp_path, "docs")
        docs.wait_for_selector(".opblock", timeout=30_000)
        assert docs.locator(".opblock").count() > 20  # the operations, listed
        redoc, more = _visit(context, f"{live_server}/redoc", tmp_path, "redoc")
        redoc.wait_for_selector("[data-section-id*='operation/']", timeout=60_000)
    finally:
        context.close()
    assert elsewhere == []  # nothing was asked of another site, not even ReDoc's logo:
    # the page's policy refuses it before any request (the browser reports it refused).
    logo = "https://cdn.redoc.ly/redoc/logo-mini.svg"
    assert problems == [] and [p for p in more if logo not in p] == []
