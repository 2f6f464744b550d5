"""Every write sent with an ``Idempotency-Key``, answered once: the key claimed before the
work, the first answer given again to each retry of the same request.

The upload and the webhook writes call :func:`idempotent` with what they read of
the request (the key, the SHA-256 of the body) and their work; the rows are
:mod:`pkgcat.storage.writes.idempotency`'s. For a key:

- first seen (or its claim expired): claimed, then the work is done and its answer kept:
  a success, or a refusal of the request itself (4xx), which a retry of the same bytes
  would get again;
- claimed by a request with the same operation and body, not answered yet: code 16,
  HTTP 409 with ``Retry-After`` (the retry then gets the first answer);
- answered for the same operation and body: that answer again, byte for byte;
- used with another operation or body, answered or not: code 2 naming ``Idempotency-Key``.

A failure on the server's side (5xx, the database gone, the request cancelled)
releases the claim, so that a retry does the work.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
import orjson

from pkgcat.errors import ApiError, InvalidArgument, KeptRefusal, RequestInProgress
from pkgcat.http.errors import error_response
from pkgcat.storage.writes.idempotency import Answers, Claim, Kept

if TYPE_CHECKING:
    from pkgcat.http.uploads import Incoming

log = logging.getLogger("pkgcat.http")
_IDEMPOTENCY_KEY = re.compile(rb"[\x21-\x7e]{1,255}")
"""Visible ASCII, 1 to 255 characters (Stripe's keys are at most 255)."""


def idempotency_key(incoming: Incoming) -> str | None:
    """The request's ``Idempotency-Key``, if any; code 2 naming it when malformed."""
    key = incoming.header(b"idempotency-key")
    if key is None:
        return None
    if not _IDEMPOTENCY_KEY.fullmatch(key):
        raise InvalidArgument(
            "Idempotency-Key", "must be 1 to 255 visible ASCII characters (no space)"
        )
    return key.decode("ascii")


async def idempotent(
    answers: Answers,
    application_id: int,
    key: str | None,
    operation: str,
    request_sha256: str,
    work: Callable[[], Awaitable[bytes]],
) -> bytes:
    """The answer of ``work()`` (a success's body; an :class:`ApiError` raised), done at most
    once per ``key`` of the application; without a key, simply done."""
    if key is None:
        return await work()
    now = int(time.time())
    found = await anyio.to_thread.run_sync(
        answers.claim, application_id, key, operation, request_sha256, now
    )
    if isinstance(found, Kept):
        return replayed(found, operation, request_sha256)
    try:
        body = await work()
    except ApiError as error:
        if error.status >= 500:
            await _release(answers, found)
            raise
        status, refusal, _ = error_response(error)
        await _complete(answers, found, status, refusal)
        raise
    except BaseException:
        await _release(answers, found)
        raise
    await _complete(answers, found, 200, body)
    return body


def replayed(kept: Kept, operation: str, request_sha256: str) -> bytes:
    """The body of a kept success; raises what else the row says (see the module)."""
    if kept.operation != operation or kept.request_sha256 != request_sha256:
        raise InvalidArgument(
            "Idempotency-Key",
            "already used with another request body; send a new key for a new request",
        )
    if kept.in_progress:
        raise RequestInProgress(
            "Idempotency-Key: a request with this key and body is still in progress; "
            f"retry after {RequestInProgress.retry_after} s to get its answer"
        )
    if kept.status != 200:
        refusal = orjson.loads(kept.body)
        raise KeptRefusal(refusal["code"], kept.status, refusal["response"])
    return kept.body


async def _complete(answers: Answers, claim: Claim, status: int, body: bytes) -> None:
    """Keep the answer; when that fails, give the key back: the work was done and its answer
    goes out all the same, but a retry does the work again (an upload's, the same bytes
    published already, changes nothing)."""
    now = int(time.time())
    with anyio.CancelScope(shield=True):
        try:
            await anyio.to_thread.run_sync(answers.complete, claim, status, body, now)
        except Exception as error:
            log.warning(
                "the answer of %s under an Idempotency-Key was not kept (%s); the key is "
                "given back",
                claim.operation,
                type(error).__name__,
            )
            await _release(answers, claim)


async def _release(answers: Answers, claim: Claim) -> None:
    """Give the key back, best effort: when the database is gone the claim expires instead."""
    with anyio.CancelScope(shield=True):
        try:
            await anyio.to_thread.run_sync(answers.release, claim)
        except Exception as error:  # the failure being answered matters more
            log.warning(
                "the Idempotency-Key of a failed %s was not given back (%s); it is free again "
                "after PKGCAT_IDEMPOTENCY_CLAIM_SECONDS",
                claim.operation,
                type(error).__name__,
            )
