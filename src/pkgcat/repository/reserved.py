"""What no seller's file may claim: the device's own packages, and the fields that make apt
install a package nobody chose.

A whole-catalogue repository is one more source on every device that adds it, at apt's
default priority (500): a file there named as an installed package with a higher version is
an upgrade of it, and its maintainer scripts run as root. So a publish refuses:

- **Reserved ids** (:data:`RESERVED_IDS`, :data:`RESERVED_PREFIXES`): the package managers
  (apt, dpkg, Cydia, Sileo, Zebra and their ids), the hooking platforms (Substrate, ElleKit,
  Substitute, libhooker), ``firmware`` (which every ``firmware (>= x)`` relation asks the
  device for) and the virtual ``cy+``/``gsc.`` packages Cydia and Sileo make for the device's
  model, CPU and capabilities. A fake ``firmware 99`` would satisfy every constraint, and an
  ``apt 99:9`` replace apt itself.
- **Fields that install on their own** (:data:`REFUSED_FIELDS`): apt's ``dist-upgrade``
  installs every ``Essential: yes`` package it finds (apt-pkg/upgrade.cc, "install each
  essential package which is not installed"), and ``Protected``/``Important`` ones resist
  removal. A seller's package is chosen by its buyer, never installed by itself.

Imported repositories (the operator's choice) are read as they are.
"""

from __future__ import annotations

RESERVED_IDS = frozenset(
    (
        # Package managers and the tools they run on.
        "apt", "apt1.4", "apt7", "apt7-key", "apt7-lib", "apt-key", "apt-lib", "libapt",
        "libapt-pkg-dev", "dpkg", "dpkg-dev", "cydia", "cydia-lproj", "sileo", "sileo-beta",
        "org.coolstar.sileo", "org.coolstar.sileobeta", "xyz.willy.zebra", "zebra",
        "com.saurik.cydia", "installer",
        # What every tweak depends on or is hooked by.
        "firmware", "mobilesubstrate", "com.saurik.substrate", "com.saurik.substrate.safemode",
        "ellekit", "substitute", "com.ex.substitute", "org.coolstar.libhooker",
        "libhooker", "preferenceloader", "jailbreak-resources", "essential",
    )
)  # fmt: skip
"""Ids of the device's own packages (compared in lower case, as apt compares them)."""
RESERVED_PREFIXES = ("cy+", "gsc.")
"""Cydia's and Sileo's virtual packages: the device's model, CPU, iOS and capabilities."""
REFUSED_FIELDS = ("Essential", "Protected", "Important", "Build-Essential")
"""Fields that make apt install a package, or keep it installed, on its own."""


def reserved_problem(package: str) -> str | None:
    """Why a seller may not publish ``package``: it names one of the device's own; or None."""
    folded = package.lower()
    if folded in RESERVED_IDS or folded.startswith(RESERVED_PREFIXES):
        return (
            f"package {package!r} is reserved: it names one of the device's own packages, "
            "which a file of this repository would replace on every device"
        )
    return None


def field_problem(name: str, value: str) -> str | None:
    """Why a seller's control file may not hold the field; or None."""
    for refused in REFUSED_FIELDS:
        if name.lower() == refused.lower() and value.strip().lower() not in ("", "no"):
            return (
                f"{refused}: {value.strip()!r} would make apt install or keep the package by "
                "itself; a seller's package is installed only when its buyer chooses it"
            )
    return None
