"""The sellers' shop: a package's page, price, versions, gifts, sales and discount codes.

Use cases (one function each, domain values in and out, :class:`~pkgcat.shop.errors.ShopRefused`
naming the field on bad input): :mod:`pages` (the page and its images), :mod:`prices` (price,
availability, the sale), :mod:`versions`, :mod:`gifts`, :mod:`discounts`, :mod:`history`.
Storage is :mod:`pkgcat.storage.shop`; the values and errors, :mod:`values` and :mod:`errors`,
sit with the records and rules so storage can return them.
"""
