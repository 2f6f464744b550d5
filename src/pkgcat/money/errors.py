"""The money services' errors beyond a wrong argument (those are
:class:`pkgcat.errors.InvalidArgument`, naming the parameter)."""

from __future__ import annotations


class MoneyError(Exception):
    """A money use case that cannot be done; the message says why, for the seller."""


class NoPlatform(MoneyError):
    """The store has no payment platform (``PKGCAT_STORE_PLATFORM=none``)."""


class PlatformUnavailable(MoneyError):
    """The platform could not be asked now; the same request later resumes the same work."""


class PlatformRefused(MoneyError):
    """The platform said no (a refund it will not make): nothing was done."""
