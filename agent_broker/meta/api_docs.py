"""The interactive API documents: /docs (Swagger UI) and /redoc (ReDoc), over the service's
OpenAPI document. Their scripts, style sheet and icon are served by the service itself,
from the copies the fastapi-offline package ships, so the pages render where no other
site can be reached. FastAPI's own pages, which load them from a CDN, are off (app.py)."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import FileResponse, HTMLResponse

from agent_broker.http.routing import broker_router

router = broker_router(include_in_schema=False)

SWAGGER_UI_PATH = "/docs"
OAUTH2_REDIRECT_PATH = "/docs/oauth2-redirect"
REDOC_PATH = "/redoc"
ASSETS_PATH = "/docs/assets"
# Each asset and its content type. The files change only with the package's release.
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "redoc.standalone.js": "text/javascript; charset=utf-8",
    "favicon.png": "image/png",
}
_CACHE = "public, max-age=86400"
# Images from this service (and data: URLs) only: ReDoc's sidebar asks Redocly's CDN for
# its logo (and hides it when that fails); the browser is told not to ask at all.
PAGE_POLICY = "img-src 'self' data:"


def _page(response: HTMLResponse) -> HTMLResponse:
    response.headers["content-security-policy"] = PAGE_POLICY
    return response


def _asset_folder() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def _asset_url(request: Request, name: str) -> str:
    return f"{_root(request)}{ASSETS_PATH}/{name}"


def _root(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


@router.get(SWAGGER_UI_PATH, response_class=HTMLResponse)
async def swagger_ui(request: Request) -> HTMLResponse:
    app = request.app
    page = get_swagger_ui_html(
        openapi_url=f"{_root(request)}{app.openapi_url}",
        title=f"{app.title} - Swagger UI",
        swagger_js_url=_asset_url(request, "swagger-ui-bundle.js"),
        swagger_css_url=_asset_url(request, "swagger-ui.css"),
        swagger_favicon_url=_asset_url(request, "favicon.png"),
        oauth2_redirect_url=f"{_root(request)}{OAUTH2_REDIRECT_PATH}",
        init_oauth=app.swagger_ui_init_oauth,
        swagger_ui_parameters=app.swagger_ui_parameters,
    )
    return _page(page)


@router.get(OAUTH2_REDIRECT_PATH, response_class=HTMLResponse)
async def swagger_ui_oauth2_redirect() -> HTMLResponse:
    return get_swagger_ui_oauth2_redirect_html()


@router.get(REDOC_PATH, response_class=HTMLResponse)
async def redoc(request: Request) -> HTMLResponse:
    app = request.app
    page = get_redoc_html(
        openapi_url=f"{_root(request)}{app.openapi_url}",
        title=f"{app.title} - ReDoc",
        redoc_js_url=_asset_url(request, "redoc.standalone.js"),
        redoc_favicon_url=_asset_url(request, "favicon.png"),
        with_google_fonts=False,
    )
    return _page(page)


def _asset_route(name: str, media_type: str) -> None:
    async def asset() -> FileResponse:
        return FileResponse(
            _asset_folder() / name, media_type=media_type, headers={"cache-control": _CACHE}
        )

    asset.__name__ = "docs_asset_" + name.replace("-", "_").replace(".", "_")
    router.add_api_route(
        f"{ASSETS_PATH}/{name}", asset, methods=["GET"], response_class=FileResponse
    )


for _name, _media_type in ASSETS.items():
    _asset_route(_name, _media_type)
