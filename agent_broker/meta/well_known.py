"""Discovery routes: the signed agent card and its key set, the guides for agents,
robots.txt, security.txt, the card's icon, and the A2A 0.3 surfaces that this service
does not speak (501 a2a_version_not_supported)."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import PlainTextResponse, Response

from agent_broker import clock
from agent_broker.http.context import context_of
from agent_broker.http.routing import broker_router
from agent_broker.meta import discovery
from agent_broker.meta.agent_card import PublishedCard
from agent_broker.problems import NotFound, Problem, Reason

router = broker_router(tags=["discovery"])


class MarkdownResponse(PlainTextResponse):
    media_type = "text/markdown"


class A2AVersionNotSupported(Problem):
    status, reason = 501, Reason.a2a_version_not_supported
    default_detail = (
        "This service speaks A2A 1.0 only: JSON-RPC at POST /a2a with the header "
        "A2A-Version: 1.0; its card is /.well-known/agent-card.json."
    )


def _x402_on(request: Request) -> bool:
    return context_of(request).settings.x402_enabled


@router.get("/.well-known/agent-card.json", summary="The A2A 1.0 agent card, signed (JWS)")
async def card(request: Request) -> dict:
    return context_of(request).part(PublishedCard).signed


@router.get("/.well-known/jwks.json", summary="The key the agent card is signed with")
async def jwks(request: Request) -> dict:
    return context_of(request).part(PublishedCard).jwks


@router.get("/llms.txt", response_class=MarkdownResponse, summary="A concise guide for agents")
async def llms(request: Request) -> MarkdownResponse:
    text = discovery.llms_txt(context_of(request).settings, x402_enabled=_x402_on(request))
    return MarkdownResponse(text)


@router.get(
    "/llms-full.txt",
    response_class=MarkdownResponse,
    summary="The guide for agents with every operation of the OpenAPI document",
)
async def llms_full(request: Request) -> MarkdownResponse:
    text = discovery.llms_full_txt(
        context_of(request).settings, request.app.openapi(), x402_enabled=_x402_on(request)
    )
    return MarkdownResponse(text)


@router.get("/robots.txt", response_class=PlainTextResponse, summary="Crawling rules")
async def robots(request: Request) -> PlainTextResponse:
    return PlainTextResponse(discovery.robots_txt(context_of(request).settings))


@router.get(
    "/.well-known/security.txt",
    response_class=PlainTextResponse,
    summary="How to report a security problem (RFC 9116)",
    responses={404: {"description": "no security contact is configured"}},
)
async def security(request: Request) -> PlainTextResponse:
    settings = context_of(request).settings
    if not settings.security_contact:
        raise NotFound("No security contact is configured for this deployment.")
    return PlainTextResponse(discovery.security_txt(settings, now=clock.now()))


@router.get("/icon.svg", include_in_schema=False)
async def icon() -> Response:
    return Response(discovery.ICON_SVG, media_type="image/svg+xml")


# A2A 0.3's card and REST paths: answered, not 404, so a 0.3 client learns why.
_A2A_03 = ("/.well-known/agent.json", "/v1/message:send", "/v1/message:stream", "/v1/card")


async def _a2a_03() -> None:
    raise A2AVersionNotSupported()


for _path in _A2A_03:
    router.add_api_route(
        _path,
        _a2a_03,
        methods=["GET", "POST"],
        include_in_schema=False,
        name=f"a2a_03_{_path}",
    )
router.add_api_route(
    "/v1/tasks/{rest:path}", _a2a_03, methods=["GET", "POST"], include_in_schema=False
)
