"""Zebra v1, as the tests speak it: written from Zebra's source, branch ``v1``."""

from __future__ import annotations


def zebra_paid(tag: str) -> bool:
    """Zebra's rule (ZBPackage.m:415, ``[tags containsObject:@"cydia::commercial"]``), over
    the tags as it splits them: at ``", "``, or at ``","`` when that made one piece."""
    tags = tag.split(", ")
    if len(tags) == 1 and "," in tags[0]:
        tags = tags[0].split(",")
    return "cydia::commercial" in tags
