"""The licence checks sellers already call, as use cases: no HTTP, no SQL.

- **A device's check** (YouRepo's ``package/check`` with ``udid``): with a public key, the
  kind made to sit inside a tweak, or a secret key. :meth:`LicenceService.admit` takes
  either (a public key against its own allowances, per key and per device; a secret key as
  every operation admits it), :meth:`LicenceService.device_check` answers.
- **The Packix/Havoc DRM check** (:meth:`LicenceService.drm_check`): a seller's server posts
  a device, its model, a package and a token; seller tokens are the source's keys (a secret
  key, or a public key), package tokens public keys made for one package
  (``pkgcat key create --public --package``).
- **The whitelist** (YouRepo's ``package/whitelist``): the devices a seller allows one
  package whatever they bought; read a page at a time, added and removed in bulk
  (idempotent), with a secret key (writes: its ``whitelist`` scope).

Whether a device holds a package is the one question of :mod:`pkgcat.storage.licences`:
bought (by a buyer who registered it with the source) or whitelisted, in one statement
whatever the answer, so the time of a check tells no more than its answer. What a check
shows depends on the key: a public key learns owned or not (never a purchase, a buyer or an
amount), a secret key its :class:`~pkgcat.domain.Licence` whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import anyio
from sqlalchemy import Engine

from pkgcat import keys
from pkgcat.domain import UDID, Caller, RateDecision, WhitelistEntry
from pkgcat.errors import InvalidArgument, PackageNotFound, PublicLimitSpent
from pkgcat.services import BLANK, LIMIT_DEFAULT, CatalogueService, Check
from pkgcat.storage.public_limits import PublicLimits
from pkgcat.storage.reads import Catalogue
from pkgcat.storage.writes import whitelist
from pkgcat.storage.writes.whitelist import GonePackage, WhitelistChange

CHECK = "package/check"
"""The operation a device's check is counted under."""
DRM = "drm/check"
"""The operation a DRM check is counted under."""
WHITELIST_WRITE_MAX = 500
"""Devices one whitelist write may name: one ``IN`` lookup, well within every database's
parameter limit, and a request's work bounded."""
DESCRIPTION_MAX = 200
"""Characters a whitelist entry's description may hold."""
MODEL_MAX = 64

DrmStatus = Literal["completed", "failed"]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DrmRequest:
    """What a DRM middleman sends (Packix's ``{"user": {udid, model, identifier, token}}``),
    as read from its body, a ``token`` header or ``Authorization``; a field left out is
    ``None``."""

    token: str | None
    udid: str | None
    model: str | None
    identifier: str | None


@dataclass(frozen=True, slots=True)
class DrmAnswer:
    """Packix's answer: ``completed`` when the device owns the package, ``failed`` when not."""

    status: DrmStatus
    package: str
    udid: str


@dataclass(frozen=True, slots=True)
class WhitelistPage:
    """A page of a package's whitelist, by udid: ``start`` is ``(page - 1) * limit``."""

    start: int
    limit: int
    total: int
    page: int
    entries: tuple[WhitelistEntry, ...]


@dataclass(frozen=True, slots=True)
class WhitelistWrite:
    """What a whitelist write did, for the package it names."""

    package: str
    change: WhitelistChange


def _udid(value: str | None, name: str = "udid") -> str:
    if not value:
        raise InvalidArgument(name, "missing; give the device's UDID")
    if not UDID.fullmatch(value):
        raise InvalidArgument(
            name,
            "not a device id: at most 64 letters, digits and '-', like 00008030-001A2D3E0C42802E",
        )
    return value


def _model(value: str | None) -> str | None:
    if value is None:
        return None
    if not value or len(value) > MODEL_MAX or not value.isprintable():
        raise InvalidArgument(
            "model", f"a device model is 1 to {MODEL_MAX} printable characters, like iPhone12,1"
        )
    return value


def _package(value: str | None, name: str = "package") -> str:
    found = (value or "").strip(BLANK)
    if not found:
        raise InvalidArgument(name, "missing; give the package's identifier")
    return found


class LicenceService:
    """The device checks, the DRM check and the whitelist, over the catalogue's services."""

    def __init__(
        self,
        service: CatalogueService,
        catalogue: Catalogue,
        limits: PublicLimits,
        engine: Callable[[], Engine],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``engine``: the worker's write engine, made at its first use (whitelist writes)."""
        self._service = service
        self._catalogue = catalogue
        self._limits = limits
        self._engine = engine
        self._clock = clock

    # Admission ---------------------------------------------------------------------------

    async def admit(
        self,
        key: str | None,
        udid: str | None,
        operation: str = CHECK,
        cutoff: float | None = None,
    ) -> tuple[Caller, RateDecision]:
        """Authenticate a licence check, spend its allowance and count it under ``operation``.

        A public key (by its form) spends one check of its own allowance and one of the
        device's (``udid``; a malformed or missing one spends the key's alone, and is refused
        after the count, as any argument is); its refusal is :class:`PublicLimitSpent`. Any
        other key is a secret key, admitted against its application's limit
        (:meth:`CatalogueService.admit`). The count is durable when this returns.
        """
        if not key or not keys.is_public(key):
            return await self._service.admit(key, operation, cutoff)
        caller = await self._service.authenticate_public(key)
        device = udid if udid is not None and UDID.fullmatch(udid) else None
        found = await self._limits.hit(caller.key.id, device)
        if found.spent is not None:
            spent = PublicLimitSpent(found.decision, caller.application.id, found.spent)
            raise await self._service.refusal(caller, spent)
        return await self._service.count(caller, operation, cutoff), found.decision

    # Checks ------------------------------------------------------------------------------

    async def device_check(
        self, caller: Caller, package_id: str | None, udid: str | None, model: str | None = None
    ) -> Check:
        """Whether device ``udid`` (of ``model``, when given) holds a package of the caller's
        source: bought, or on its whitelist. Code 8 for an unknown package (or another
        source's offline one), 12 for another source's or, with a key made for one package,
        any other. The answer carries the :class:`~pkgcat.domain.Licence` whole: a public
        key's caller shows only whether it is owned."""
        package = _package(package_id)
        device, of = _udid(udid), _model(model)
        return await self._service.check(caller, package, "udid", device, of)

    async def drm_check(
        self, request: DrmRequest, operation: str = DRM, cutoff: float | None = None
    ) -> tuple[DrmAnswer, Caller, RateDecision]:
        """The Packix/Havoc DRM check: ``completed`` when the device owns the package,
        ``failed`` when it does not; an error otherwise (a missing or invalid token, a
        package of another source or outside the token's, a missing or malformed field).

        The token is any key of the package's source: a secret key (a Packix seller token,
        kept on the seller's server), or a public key, for the whole source or made for one
        package (a package token). It is admitted and counted as a device's check is.
        """
        caller, decision = await self.admit(request.token, request.udid, operation, cutoff)
        package = _package(request.identifier, "identifier")
        found = await self.device_check(caller, package, request.udid, request.model)
        assert found.udid is not None
        status: DrmStatus = "completed" if found.owned else "failed"
        return DrmAnswer(status, found.package, found.udid), caller, decision

    # The whitelist -----------------------------------------------------------------------

    async def whitelist(
        self, caller: Caller, package_id: str, limit: int = LIMIT_DEFAULT, page: int = 1
    ) -> WhitelistPage:
        """One page of the devices on a package of the caller's source's whitelist, by udid.

        A page past the end is empty and still carries the true total.
        """
        package = await self._service.own_package(caller, package_id, "its whitelist")
        start = (page - 1) * limit
        total, entries = await self._catalogue.whitelist(package.id, limit, start)
        return WhitelistPage(start, limit, total, page, tuple(entries))

    async def whitelist_add(
        self,
        caller: Caller,
        package_id: str,
        entries: Sequence[tuple[str, str]],
        operation: str = "whitelist/add",
    ) -> WhitelistWrite:
        """Put each (udid, description) on the package's whitelist (the ``whitelist`` scope)."""
        self._service.require_scope(caller, "whitelist", operation)
        checked = checked_entries(entries)
        package = await self._service.own_package(caller, package_id, "its whitelist")
        change = await self._write(whitelist.add, package.id, checked, int(self._clock()))
        return WhitelistWrite(package.package, change)

    async def whitelist_remove(
        self,
        caller: Caller,
        package_id: str,
        udids: Sequence[str],
        operation: str = "whitelist/remove",
    ) -> WhitelistWrite:
        """Take each udid off the package's whitelist (the ``whitelist`` scope)."""
        self._service.require_scope(caller, "whitelist", operation)
        checked = checked_udids(udids)
        package = await self._service.own_package(caller, package_id, "its whitelist")
        change = await self._write(whitelist.remove, package.id, checked)
        return WhitelistWrite(package.package, change)

    async def _write(
        self, write: Callable[..., WhitelistChange], package_row_id: int, *args: object
    ) -> WhitelistChange:
        try:
            return await anyio.to_thread.run_sync(write, self._engine(), package_row_id, *args)
        except GonePackage:
            raise PackageNotFound("package: no such package in this catalogue") from None


def checked_entries(entries: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """Whitelist entries (udid, description) as a write takes them: :class:`InvalidArgument`
    naming ``udid`` or ``description`` for the first that breaks a rule."""
    return [(_udid(u), _description(d)) for u, d in _bounded(entries)]


def checked_udids(udids: Sequence[str]) -> list[str]:
    """Devices as a whitelist removal takes them (the rules of :func:`checked_entries`)."""
    return [_udid(u) for u in _bounded(udids)]


def _bounded(items: Sequence[T]) -> Sequence[T]:
    if not items:
        raise InvalidArgument("udid", "give at least one device")
    if len(items) > WHITELIST_WRITE_MAX:
        raise InvalidArgument(
            "udid", f"at most {WHITELIST_WRITE_MAX} devices a request, got {len(items)}"
        )
    return items


def _description(value: str) -> str:
    if len(value) > DESCRIPTION_MAX:
        raise InvalidArgument(
            "description", f"at most {DESCRIPTION_MAX} characters, got {len(value)}"
        )
    if not value.isprintable():  # no control character, nor any other a terminal would obey
        raise InvalidArgument("description", "only printable characters, on one line")
    return value
