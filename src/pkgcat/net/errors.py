"""Why an outbound request failed: every error names the address and what went wrong.

::

    OutboundError (Exception)    a request that did not give an answer; the message says why
     ├── AddressRefused          the address is in a refused range and PKGCAT_FETCH_ALLOW does not allow it
     ├── RedirectRefused         a redirect to an address the caller does not follow
     ├── TooLarge                more bytes than the cap, on the wire or once decoded
     └── DeadlineExceeded        the whole exchange took longer than its deadline

No connection is opened to a refused address: the name is resolved, every address it
has is checked, and only then is one of them connected to.
"""

from __future__ import annotations


class OutboundError(Exception):
    """A request that did not give an answer; the message names the address and why."""


class AddressRefused(OutboundError):
    """The address is loopback, private, link-local, ... and not allowed by PKGCAT_FETCH_ALLOW."""


class RedirectRefused(OutboundError):
    """A redirect whose target the caller does not follow."""


class TooLarge(OutboundError):
    """An answer larger than its cap, on the wire or once its Content-Encoding is decoded."""


class DeadlineExceeded(OutboundError):
    """An exchange still running at its deadline (redirects and the whole body included)."""
