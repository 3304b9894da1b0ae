"""The application factory."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp

from agent_broker import RELEASE_TAG
from agent_broker.accounts.credentials import handle_for
from agent_broker.accounts.dashboard import router as dashboard_router
from agent_broker.accounts.routes import router as accounts_router
from agent_broker.accounts.service import protocol_bindings
from agent_broker.auth.seam import Authenticator
from agent_broker.certification.routes import router as certification_router
from agent_broker.config import Settings
from agent_broker.db.engine import Database, create_database, jobs_database
from agent_broker.deals.routes import router as deals_router
from agent_broker.domains.routes import router as domains_router
from agent_broker.events.routes import router as events_router
from agent_broker.http.body import BodyGuardMiddleware
from agent_broker.http.context import AppContext, app_context
from agent_broker.http.fastapi_internals import served_routes
from agent_broker.http.jwt_bearer import JwtVerifier, KeySetSource
from agent_broker.http.outbound import OutboundClient, OutboundPolicy
from agent_broker.http.policy import SECURITY_SCHEMES, security_requirements
from agent_broker.http.rate_limits import RateLimiter
from agent_broker.http.request_id import RequestContextMiddleware, RequestObserver
from agent_broker.http.responses import finish_document
from agent_broker.http.routing import (
    BrokerRoute,
    FastAPIHandledRoute,
    include_flat,
    include_nested,
    index_routes,
)
from agent_broker.jobs.runner import Scheduler
from agent_broker.ledger.routes import router as ledger_router
from agent_broker.ledger.verdict import latest_verdict_status
from agent_broker.listings.routes import router as listings_router
from agent_broker.logging import configure as configure_logging
from agent_broker.market.routes import router as market_router
from agent_broker.mcp_tools.server import mount as mount_mcp
from agent_broker.mcp_tools.server import running as running_mcp
from agent_broker.membership.routes import router as membership_router
from agent_broker.membership.webhook_routes import router as webhooks_account_router
from agent_broker.meta.a2a import a2a_dispatcher
from agent_broker.meta.agent_card import PublishedCard, card_body
from agent_broker.meta.api_docs import router as api_docs_router
from agent_broker.meta.discovery import llms_txt
from agent_broker.meta.metrics import Metrics
from agent_broker.meta.metrics import router as metrics_router
from agent_broker.meta.reachability import Reachability
from agent_broker.meta.routes import router as meta_router
from agent_broker.meta.service import DocumentCache
from agent_broker.meta.well_known import router as discovery_router
from agent_broker.payments.routes import dashboard as payments_dashboard_router
from agent_broker.payments.routes import webhooks as webhooks_router
from agent_broker.payments.x402.gate import X402, X402Payments
from agent_broker.payments.x402.manifest import X402Manifest, payable_operations
from agent_broker.payments.x402.receipts import ReceiptMiddleware
from agent_broker.payments.x402.routes import router as x402_router
from agent_broker.payments.x402.wallet_routes import router as wallet_router
from agent_broker.problems import install_handlers
from agent_broker.reputation.routes import router as reputation_router
from agent_broker.threads.routes import router as threads_router
from agent_broker.tokens.keys import signer_for
from agent_broker.tokens.routes import router as tokens_router

# Every feature's routes, in the order they are matched: the trading routes first, since
# a request is matched against each route before its own (no two routers' paths overlap).
ROUTERS = (
    listings_router,
    threads_router,
    membership_router,
    accounts_router,
    wallet_router,
    domains_router,
    certification_router,
    webhooks_account_router,
    events_router,
    dashboard_router,
    payments_dashboard_router,
    webhooks_router,
    deals_router,
    reputation_router,
    meta_router,
    discovery_router,
    api_docs_router,
    market_router,
    x402_router,
    tokens_router,
    ledger_router,
)


class BrokerAPI(FastAPI):
    """FastAPI with the request-id and access-log middleware around the whole stack, error
    middleware included, so even a 500 answer carries X-Request-ID; inside it, the body
    guard reads and bounds every request body before anything else runs."""

    request_observers: tuple[RequestObserver, ...] = ()

    def build_middleware_stack(self) -> ASGIApp:
        context = app_context(self)
        settings = context.settings
        stack = super().build_middleware_stack()
        if settings.x402_enabled:
            stack = ReceiptMiddleware(stack, lambda account_id: handle_for(settings, account_id))
        guarded = BodyGuardMiddleware(
            stack,
            max_bytes=settings.max_body_bytes,
            timeout=settings.body_timeout_seconds,
            base_url=lambda: settings.public_base_url,
        )
        return RequestContextMiddleware(guarded, self.request_observers)

    def openapi(self) -> dict[str, Any]:
        if self.openapi_schema is None:
            context = app_context(self)
            offers = context.optional(X402Manifest)
            self.openapi_schema = finish_document(
                super().openapi(),
                protocol_bindings=protocol_bindings(context.settings),
                payable=offers.operations if offers is not None else (),
                security=security_requirements(served_routes(self.routes)),
                security_schemes=SECURITY_SCHEMES,
            )
        return self.openapi_schema


def create_app(settings: Settings | None = None, *, run_jobs: bool | None = None) -> FastAPI:
    settings = settings or Settings()
    configure_logging(settings.log_level)
    db = create_database(settings)
    # The scheduler's jobs have the longer statement limit: on PostgreSQL, connections of
    # their own (agent_broker.db.timeouts).
    jobs_db = (
        jobs_database(db, settings)
        if (settings.jobs_enabled if run_jobs is None else run_jobs)
        else None
    )
    metrics = (
        Metrics(db, verdict_source=latest_verdict_status) if settings.metrics_enabled else None
    )
    if metrics:
        metrics.count_fees_on_commit(db.writer)
        if jobs_db is not None and jobs_db is not db:
            metrics.count_fees_on_commit(jobs_db.writer)
    scheduler: Scheduler | None = None

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if db.checkpointer:
            db.checkpointer.start()
        if scheduler:
            scheduler.start()
        try:
            async with running_mcp(mcp_server):
                yield
        finally:
            if scheduler:
                scheduler.stop()
            if db.checkpointer:
                db.checkpointer.stop()
            db.dispose()
            if jobs_db is not None and jobs_db is not db:
                jobs_db.dispose()

    app = BrokerAPI(
        title="agent-broker",
        version=RELEASE_TAG,
        description="Marketplace broker for automated agents.",
        docs_url=None,  # /docs and /redoc with local assets: agent_broker.meta.api_docs
        redoc_url=None,
        lifespan=lifespan,
        # FastAPI's own OpenTelemetry hooks: off, since the service counts and logs its
        # requests itself (/metrics, the access line) and they cost a check per request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    # Routes declared on the app itself (tests, extensions) end their sessions like the rest.
    app.router.route_class = BrokerRoute if settings.planned_routes else FastAPIHandledRoute
    app.state.context = context = build_context(settings, db, metrics=metrics)
    if metrics:
        app.request_observers = (metrics.observe_request,)
    install_handlers(app, settings, on_unavailable=metrics.count_unavailable if metrics else None)
    routers = ((metrics_router,) if metrics else ()) + ROUTERS
    # The speed layer (BROKER_PLANNED_ROUTES): routes flat, matched by index, with planned
    # handlers; off, FastAPI matches and serves them itself, with the same answers.
    (include_flat if settings.planned_routes else include_nested)(app, routers)
    mcp_server = mount_mcp(app, context)
    if jobs_db is not None:
        scheduler = Scheduler(
            context.with_db(jobs_db), observer=metrics.job_finished if metrics else None
        )
    if settings.planned_routes:
        index_routes(app)
    return app


def build_context(
    settings: Settings, db: Database, *, metrics: Metrics | None = None
) -> AppContext:
    """Every service the app's routes, MCP tools, jobs and commands share, built here once.
    The token signer's key is loaded now, so a bad BROKER_SIGNING_KEY stops start-up
    rather than the first request that signs (so is a configured BROKER_CARD_SIGNING_KEY)."""
    x402 = X402.from_settings(settings)
    x402_enabled = x402 is not None
    operator_outbound = OutboundClient(OutboundPolicy.for_operator(settings))
    parts: list[object] = [
        signer_for(settings),
        PublishedCard(settings, x402_enabled=x402_enabled),
        # What answers POST /a2a (declared in agent_broker.meta.routes, so it is documented).
        a2a_dispatcher(
            card_body(settings, x402_enabled=x402_enabled),
            llms_txt(settings, x402_enabled=x402_enabled),
        ),
        DocumentCache(),
        Reachability(db, settings),
    ]
    if x402 is not None:
        parts += [
            x402,
            X402Manifest.build(payable_operations(ROUTERS), x402.terms, settings.public_base_url),
        ]
    if metrics is not None:
        parts.append(metrics)
    return AppContext(
        settings=settings,
        db=db,
        rate_limiter=RateLimiter(settings),
        outbound=OutboundClient(OutboundPolicy.from_settings(settings)),
        operator_outbound=operator_outbound,
        # Routes declare policies (agent_broker.http.policy); this resolves their callers,
        # with x402 as the payment scheme of the metered routes when payments are on.
        authenticator=Authenticator(settings, X402Payments() if x402 is not None else None),
        session_verifier=(
            JwtVerifier(
                issuer=settings.idp_issuer,
                audience=settings.idp_audience,
                keys=KeySetSource(settings.idp_jwks_url, operator_outbound),
            )
            if settings.sessions_enabled
            else None
        ),
        oauth_verifier=(
            JwtVerifier(
                issuer=settings.oauth_issuer,
                audience=settings.oauth_audience,
                keys=KeySetSource(settings.oauth_jwks_url, operator_outbound),
                require_jti=True,
            )
            if settings.oauth_enabled
            else None
        ),
        parts=AppContext.collect(parts),
    )


def app_factory() -> FastAPI:
    """Entry point for uvicorn --factory (each worker builds its own app)."""
    app = create_app()
    settle_heap()
    return app


def settle_heap() -> None:
    """Move what startup built (modules, routes, models, schemas: some hundreds of
    thousands of objects that live as long as the worker) out of the cyclic garbage
    collector's reach. Its full collections otherwise walk all of them again and again
    under load: about 5% of a feed page's CPU (make bench). Garbage made afterwards is
    collected as before."""
    gc.collect()
    gc.freeze()
