"""A Python client for Folio servers.

`Folio` (blocking) and `AsyncFolio` (asyncio) speak to one agent of a ``folio serve``:
create and resume sessions, follow their events without gaps across reconnects, send
follow-ups with idempotent retries and rotating continuation tokens, decide approvals. The
wire types (`Event`, `SessionSummary`, ...) are TypedDicts generated from the server's
OpenAPI document (`folio_client.models`).
"""

from ._async import AsyncArtifacts, AsyncEvals, AsyncFolio, AsyncSession, AsyncSessions
from ._core import RetryPolicy, TurnResult
from ._errors import (
    AuthError,
    BadRequestError,
    ConflictError,
    FolioConnectionError,
    FolioError,
    IdempotencyKeyReusedError,
    NotFoundError,
    OverloadedError,
    RateLimitedError,
    StaleTokenError,
)
from ._models import Event
from ._sync import Artifacts, Evals, Folio, Session, Sessions

__version__ = "0.1.0"

__all__ = [
    "Artifacts",
    "AsyncArtifacts",
    "AsyncEvals",
    "AsyncFolio",
    "AsyncSession",
    "AsyncSessions",
    "AuthError",
    "BadRequestError",
    "ConflictError",
    "Evals",
    "Event",
    "Folio",
    "FolioConnectionError",
    "FolioError",
    "IdempotencyKeyReusedError",
    "NotFoundError",
    "OverloadedError",
    "RateLimitedError",
    "RetryPolicy",
    "Session",
    "Sessions",
    "StaleTokenError",
    "TurnResult",
]
