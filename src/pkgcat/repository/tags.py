"""The ``Tag`` a served stanza carries: ``cydia::commercial`` exactly when the package is paid.

Sileo and Zebra decide from the index alone whether a package is paid, and only
for a paid one do they ask the store for its price and, once bought, for a
download URL; a package they take for free is fetched from its plain
``Filename``, which the repository refuses (402) for a paid file. So the stanza
must say what the repository does, whatever the .deb's own control file says:

- Sileo (``Sileo/Backend/Control File Parser/ControlFileParserFast.c``,
  ``tagExists``, called for ``::commercial`` in ``controlFileSetSwiftValue``)
  looks for the first ``::commercial`` in the raw value and takes it only at
  the value's end, or when the byte *two* after it is a space or a comma: the
  ``", "`` spelling. It stops at the first occurrence, so ours comes first.
- Zebra v1 (``ZBPackage.m``, ``isPaid``) keeps the tags split at ``", "`` and
  looks for an exact, lower-case ``cydia::commercial``.
- Both read a field on one line: Sileo's parser gives up on a stanza whose
  field other than ``Description`` is folded onto a second line.

Paid is the catalogue's rule (:attr:`pkgcat.storage.served.ServedFile.paid`): a
price above zero, or no price yet and tagged commercial by the package itself.
A price of zero set by the seller or operator makes a package free, its .deb is
served to anyone, and so its stanza loses every ``::commercial`` tag: keeping the
package's own one would send a signed-in device to ask for a download URL of a
package nobody buys. Every other tag is kept, in its order.
"""

from __future__ import annotations

import re

COMMERCIAL = "cydia::commercial"
_FIELD = re.compile(r"^tag:[^\n]*(?:\n[ \t][^\n]*)*", re.IGNORECASE | re.MULTILINE)
"""The ``Tag`` field and its folded lines (a search, not a split: every build runs it for
every file)."""


def _is_commercial(tag: str) -> bool:
    # Sileo takes any facet's "::commercial" (case matters to both clients, not to us).
    return tag.lower().endswith("::commercial")


def tagged(control: str, paid: bool) -> str:
    """``control`` (a paragraph, no final newline) with its ``Tag`` as ``paid`` needs it.

    A paragraph whose tags are already right (a free package's that say nothing of
    ``::commercial``, in whatever spelling) is returned unchanged; otherwise its ``Tag``
    field (folded lines included) is written again on one line, where it stood, or
    added at the end for a paid package that had none.
    """
    if not paid and "::commercial" not in control.lower():
        return control  # most of a large catalogue: free, and nothing to take out
    found = _FIELD.search(control)
    if found is None:
        return f"{control}\nTag: {COMMERCIAL}" if paid else control
    tags = [tag.strip() for tag in found.group()[4:].split(",") if tag.strip()]
    others = [tag for tag in tags if not _is_commercial(tag)]
    if not paid and len(others) == len(tags):
        return control  # a free package's own tags, none saying paid: as sent
    wanted = ", ".join([COMMERCIAL, *others] if paid else others)
    if found.group() == f"Tag: {wanted}":
        return control
    before, after = control[: found.start()], control[found.end() :]
    if wanted:
        return f"{before}Tag: {wanted}{after}"
    # No tag left: the field goes, with the line break that ended or began it.
    return before + after[1:] if after else before[:-1]
