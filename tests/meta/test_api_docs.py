"""/docs and /redoc load nothing from other sites: every script, style sheet and icon the
pages name is served by the service, with its content type (the pages render offline;
tests/market/test_browser.py renders them in chromium with every other site cut off)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from agent_broker.meta.api_docs import ASSETS, ASSETS_PATH, PAGE_POLICY

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


class _Links(HTMLParser):
    """The URLs a page names in its tags (scripts, style sheets, icons)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.urls += [value for name, value in attrs if name in ("src", "href") and value]


def _fetched(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return parser.urls


@sqlite_only
@pytest.mark.parametrize(
    ("page", "wanted"),
    [
        ("/docs", {"swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"}),
        ("/redoc", {"redoc.standalone.js", "favicon.png"}),
    ],
)
def test_the_api_pages_use_only_assets_the_service_serves(client, page, wanted) -> None:
    response = client.get(page)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    # Nor may a script fetch an image from elsewhere (ReDoc's logo).
    assert response.headers["content-security-policy"] == PAGE_POLICY == "img-src 'self' data:"
    urls = _fetched(response.text)
    assert {url.rsplit("/", 1)[-1] for url in urls} == wanted
    for url in urls:
        # Same origin: a path on this service, never another host.
        assert url.startswith(f"{ASSETS_PATH}/") and not url.startswith("//"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["content-type"] == ASSETS[url.rsplit("/", 1)[-1]]
        assert len(asset.content) > 1000
    # Nor does any inline script or style reach out: no absolute URL anywhere in the page.
    assert "http://" not in response.text and "https://" not in response.text
    assert "/openapi.json" in response.text


@sqlite_only
def test_the_pages_stay_out_of_the_openapi_document(client) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert not [path for path in paths if path.startswith(("/docs", "/redoc"))]
    assert client.get("/docs/oauth2-redirect").status_code == 200
    assert client.get(f"{ASSETS_PATH}/no-such-file.js").status_code == 404
