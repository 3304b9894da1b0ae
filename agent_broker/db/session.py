"""One transaction per request: the dependency commits when the route returns and rolls
back when it raises, before the response leaves. Services only flush."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session


def _transaction(session: Session) -> Iterator[Session]:
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def write_session(request: Request) -> Iterator[Session]:
    yield from _transaction(request.app.state.db.writer())


def read_session(request: Request) -> Iterator[Session]:
    yield from _transaction(request.app.state.db.reader())


WriteSession = Annotated[Session, Depends(write_session, scope="function")]
ReadSession = Annotated[Session, Depends(read_session, scope="function")]
