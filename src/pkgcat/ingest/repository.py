"""From LOCATION to the verified, decompressed indexes to import.

LOCATION is one of:

- a repository root, local or ``http(s)://``: a flat repository (``Release``
  and ``Packages*`` side by side), or a ``dists/`` tree read for one suite,
  its components (``--component``, default: those its Release lists) and
  architectures (``--architecture``, default: those its Release lists);
- a single index file (``Packages``, ``Packages.xz``, ...), checked against a
  ``Release`` beside it when there is one.

Like APT, the Release is read first (``InRelease``, then ``Release``), then the
best index it offers in the order of :data:`~pkgcat.ingest.compression.EXTENSIONS`.
When the Release lists hashes, only the files it lists are candidates, and
the chosen one must match its size and strongest hash: a mismatch is refused
unless ``verify`` is off, in which case it becomes a warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from pkgcat.ingest.compression import EXTENSIONS, decompress
from pkgcat.ingest.errors import FetchError, IngestError, VerificationError
from pkgcat.ingest.fetch import DirectoryReader, HttpReader, Reader, is_address
from pkgcat.ingest.limits import ImportLimits
from pkgcat.ingest.release import Release, parse_release
from pkgcat.net.fetcher import Fetcher


@dataclass(frozen=True, slots=True)
class Index:
    """One Packages index, read, checked and decompressed."""

    name: str
    """Path relative to the repository root, as reports show it."""
    data: bytes
    verified: str
    """The Release hash it was checked with (``SHA512``...), or ``""`` when it was not."""


@dataclass(slots=True)
class Repository:
    """What LOCATION holds: its Release (if any) and the indexes to import."""

    reader: Reader
    release: Release | None
    indexes: list[Index] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    local_root: Path | None = None
    """The directory when LOCATION is on disk, else ``None``."""
    limits: ImportLimits = field(default_factory=ImportLimits)

    def read(self, path: str) -> bytes | None:
        """A file of the repository, within the file cap and deadline."""
        return self.reader.read(path, self.limits.file)

    def index(self, name: str, raw: bytes, verified: str) -> Index:
        """The index ``name`` decompressed, within the index cap."""
        return Index(
            name=name, data=decompress(name, raw, self.limits.index_bytes), verified=verified
        )


@dataclass(frozen=True, slots=True)
class Selection:
    """Which parts of a ``dists/`` tree to read."""

    suite: str | None = None
    components: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()


def _read_release(repo: Repository, directory: str) -> Release | None:
    for name in ("InRelease", "Release"):
        data = repo.read(directory + name)
        if data is not None:
            release = parse_release(directory + name, data)
            repo.warnings.extend(release.warnings)
            return release
    return None


def _verified(
    repo: Repository, release: Release | None, name: str, raw: bytes, verify: bool
) -> str:
    """Check ``raw`` against the Release's entry for ``name`` (relative to the Release)."""
    if release is None or name not in release.files:
        return ""
    try:
        return release.verify(name, raw)
    except VerificationError as error:
        if verify:
            raise
        repo.warnings.append(f"{error} (imported anyway: --no-verify)")
        return ""


def _pick(
    repo: Repository, release: Release | None, directory: str, stem: str, verify: bool
) -> Index | None:
    """The best available ``stem`` index under ``directory`` (relative to the Release)."""
    names = [stem + extension for extension in EXTENSIONS]
    listed = [name for name in names if release is not None and name in release.files]
    candidates = listed if listed and verify else listed + [n for n in names if n not in listed]
    for name in candidates:
        raw = repo.read(directory + name)
        if raw is None:
            continue
        verified = _verified(repo, release, name, raw, verify)
        if release is not None and release.files and name not in release.files:
            repo.warnings.append(f"{directory + name}: not listed in {release.name}, not verified")
        return repo.index(directory + name, raw, verified)
    if listed:
        raise FetchError(
            f"{repo.reader.root}: none of the indexes {release.name if release else ''} "
            f"lists can be read ({', '.join(directory + n for n in listed)})"
        )
    return None


def _dists(repo: Repository, selection: Selection, verify: bool) -> None:
    suite = selection.suite
    if suite is None:
        root = repo.local_root
        suites = sorted(p.name for p in (root / "dists").iterdir() if p.is_dir()) if root else []
        if len(suites) != 1:
            found = f" (found: {', '.join(suites)})" if suites else ""
            raise IngestError(f"{repo.reader.root}: give --suite to pick a suite of dists/{found}")
        suite = suites[0]
    directory = f"dists/{suite}/"
    release = _read_release(repo, directory)
    repo.release = release
    if release is None:
        repo.warnings.append(f"{directory}: no InRelease or Release, indexes not verified")
    components = selection.components or (release.components if release else ()) or ("main",)
    architectures = selection.architectures or tuple(
        a for a in (release.architectures if release else ()) if a != "source"
    )
    if not architectures:
        raise IngestError(f"{directory}: the Release lists no architectures; give --architecture")
    for component in components:
        for architecture in architectures:
            stem = f"{component.strip('/')}/binary-{architecture}/Packages"
            index = _pick(repo, release, directory, stem, verify)
            if index is None:
                repo.warnings.append(f"{directory}{stem}: no index")
            else:
                repo.indexes.append(index)
    if not repo.indexes:
        raise FetchError(f"{repo.reader.root}{directory}: no Packages index for {suite}")


def open_repository(
    location: str,
    client: Fetcher,
    selection: Selection,
    *,
    verify: bool = True,
    limits: ImportLimits | None = None,
) -> Repository:
    """Read LOCATION's Release and indexes; raise :class:`IngestError` when it cannot."""
    single: str | None = None
    if is_address(location):
        last = urlsplit(location).path.rpartition("/")[2]
        if last.startswith("Packages"):
            single = last
        reader: Reader = HttpReader(
            location[: len(location) - len(last)] if single else location, client
        )
        local_root = None
    else:
        target = Path(location)
        if target.is_file():
            single, target = target.name, target.parent
        elif not target.is_dir():
            raise FetchError(f"{location}: no such file or directory")
        reader = DirectoryReader(target)
        local_root = target.resolve()
    repo = Repository(
        reader=reader, release=None, local_root=local_root, limits=limits or ImportLimits()
    )
    if single is not None:
        repo.release = _read_release(repo, "")
        raw = repo.read(single)
        if raw is None:
            raise FetchError(f"{location}: not found")
        verified = _verified(repo, repo.release, single, raw, verify)
        if repo.release is None:
            repo.warnings.append("no InRelease or Release beside the index: not verified")
        repo.indexes.append(repo.index(single, raw, verified))
        return repo
    if selection.suite is not None:
        _dists(repo, selection, verify)
        return repo
    repo.release = _read_release(repo, "")
    index = _pick(repo, repo.release, "", "Packages", verify)
    if index is not None:
        repo.indexes.append(index)
        if repo.release is None:
            repo.warnings.append("no InRelease or Release beside the index: not verified")
        elif not repo.release.files:
            repo.warnings.append(f"{repo.release.name} lists no hashes: index not verified")
        return repo
    if local_root is not None and (local_root / "dists").is_dir():
        repo.release = None
        _dists(repo, selection, verify)
        return repo
    raise FetchError(
        f"{reader.root}: no Packages index here; for a dists/ tree give --suite (and --component)"
    )
