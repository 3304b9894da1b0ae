"""The content screen as a route dependency: the scanner with the abuse brake, bound to
the service's limiter and settings. The route binds it to its authenticated caller."""

from __future__ import annotations

from typing import Annotated, Protocol

from fastapi import Depends, Request

from agent_broker.http.context import context_of
from agent_broker.scanning.brake import Screen, screen_for


class _Caller(Protocol):
    @property
    def account_id(self) -> str: ...


class Screening:
    def __init__(self, request: Request) -> None:
        self._context = context_of(request)

    def for_caller(self, caller: _Caller) -> Screen:
        return screen_for(self._context.rate_limiter, self._context.settings, caller.account_id)


# async: building it does no I/O, so it need not cost a hop to the thread pool.
async def _screening(request: Request) -> Screening:
    return Screening(request)


Screens = Annotated[Screening, Depends(_screening)]
