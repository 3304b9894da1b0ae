"""The baseline: a bare FastAPI app with one `async` route and no middleware, served by the
benchmark in its own uvicorn process with the service's uvicorn options. Every route's
figure is divided by this one's, so the ratios say what the service adds on top of the
framework and server stack, and compare across machines."""

from __future__ import annotations

from fastapi import FastAPI

PATH = "/"

app = FastAPI()


@app.get(PATH)
async def bare() -> dict[str, bool]:
    return {"ok": True}
