"""Signed webhooks: sellers hear of each sale, refund, chargeback and publication.

- :mod:`~pkgcat.webhooks.signing`: the signing secrets (made, sealed, opened) and the
  two signatures of every delivery (``Pkgcat-Signature``, and Standard Webhooks'
  ``webhook-*`` headers);
- :mod:`~pkgcat.webhooks.endpoints`: the endpoints of an application, their addresses
  checked (https, no refused address after DNS), their secrets shown once and rolled;
- :mod:`~pkgcat.webhooks.bodies`: an event as one endpoint receives it, in its
  application's shape and time zone;
- :mod:`~pkgcat.webhooks.delivery`: the deliverer: claims endpoints, signs, posts,
  retries with backoff, disables an endpoint failing for the retry window.

Each event type is declared once (:mod:`pkgcat.events`); the events themselves are written
by the paths that make the changes, in the same transaction
(:mod:`pkgcat.storage.writes.outbox`); the SQL is in
:mod:`pkgcat.storage.webhooks`. Receivers verify with :func:`pkgcat.client.webhooks.verify`, or any
Standard Webhooks library.
"""
