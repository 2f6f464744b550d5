"""Which host names can be looked up: the checks a name passes before it reaches the resolver.

A host name someone else gave (a webhook endpoint's address, an imported
repository's, a depiction's or a redirect's) is refused before any lookup when
DNS could not carry it or IDNA cannot write it:

- a label is 1 to 63 octets and a name at most 255 octets on the wire, which is
  253 characters written out without its final dot (RFC 1035 section 2.3.4);
- a name with characters outside ASCII is written in IDNA 2008 (RFC 5891, the
  ``idna`` package, as httpx writes it), and an ``xn--`` label must be one that
  IDNA decodes.

Without these checks the standard library's resolver raises ``UnicodeError``
(its own IDNA 2003 codec: "label empty or too long") where callers wait for
``socket.gaierror``, and the request ends in a traceback instead of an error
that names the address.
"""

from __future__ import annotations

import ipaddress

import idna

MAX_LABEL = 63
"""Octets of one label (RFC 1035 section 2.3.4)."""
MAX_NAME = 253
"""Characters of a whole name, without its final dot: 255 octets on the wire."""


def _shown(label: str) -> str:
    return repr(label if len(label) <= 24 else label[:20] + "...")


def lookup_name(host: str) -> str:
    """``host`` as the resolver is given it (ASCII, A-labels); ``ValueError`` saying why it cannot be.

    An address literal (``192.0.2.1``, ``2001:db8::1``) is returned as it is.
    """
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    name = host.removesuffix(".")
    if not name:
        raise ValueError("names no host")
    if not name.isascii():
        try:
            name = idna.encode(name.lower()).decode("ascii")
        except UnicodeError as error:  # idna.IDNAError and its kinds
            raise ValueError(f"the host name is not one IDNA can encode ({error})") from None
    for label in name.split("."):
        if not label:
            raise ValueError("the host name has an empty label (two dots in a row)")
        if len(label) > MAX_LABEL:
            raise ValueError(
                f"the host name's label {_shown(label)} is {len(label)} octets long; "
                f"DNS allows {MAX_LABEL}"
            )
        if label[:4].lower() == "xn--":
            try:
                idna.decode(label)
            except UnicodeError:
                raise ValueError(
                    f"the host name's label {_shown(label)} is not a valid IDNA A-label"
                ) from None
    if len(name) > MAX_NAME:
        raise ValueError(f"the host name is {len(name)} octets long; DNS allows {MAX_NAME}")
    return name + "." if host.endswith(".") else name
