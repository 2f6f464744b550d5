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

COMMERCIAL = "cydia::commercial"


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
    lines = control.split("\n")
    start = next((i for i, line in enumerate(lines) if line[:4].lower() == "tag:"), None)
    if start is None:
        return f"{control}\nTag: {COMMERCIAL}" if paid else control
    end = start + 1
    while end < len(lines) and lines[end][:1] in (" ", "\t"):
        end += 1
    value = " ".join([lines[start][4:], *lines[start + 1 : end]])
    tags = [tag.strip() for tag in value.split(",") if tag.strip()]
    others = [tag for tag in tags if not _is_commercial(tag)]
    if not paid and len(others) == len(tags):
        return control  # a free package's own tags, none saying paid: as sent
    wanted = [COMMERCIAL, *others] if paid else others
    if end == start + 1 and lines[start] == f"Tag: {', '.join(wanted)}":
        return control
    field = [f"Tag: {', '.join(wanted)}"] if wanted else []
    return "\n".join([*lines[:start], *field, *lines[end:]])
