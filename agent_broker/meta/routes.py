from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel

from agent_broker import RELEASE_TAG
from agent_broker.meta.build import fingerprint

router = APIRouter(tags=["meta"])


class Health(BaseModel):
    status: str
    build: str


class Version(BaseModel):
    version: str


@router.get("/health", response_model=Health)
async def health() -> dict:
    return {"status": "ok", "build": fingerprint()}


@router.get("/version", response_model=Version)
async def version() -> dict:
    return {"version": RELEASE_TAG}
