"""The shop's storage: one transaction per change, its history row and webhook event in it.

Each change of a package's shop (:mod:`pages`, :mod:`prices`, :mod:`versions`,
:mod:`gifts`, :mod:`discounts`) is written with :func:`pkgcat.storage.shop.log.changed`
in the same transaction: the history's line, the event for the source's webhooks, and
the package row's ``updated_at``, whose trigger moves the catalogue generation so that
every worker's indexes and depictions follow.
"""
