"""The repository's index files, built whole from one snapshot of the catalogue.

A build makes, for the whole catalogue (``/repo/``) and for each source with
stored files (``/repo/sources/NAME/``), a flat repository (``deb URL ./``):

- ``Packages``: one stanza per stored .deb of an online package, its control
  paragraph followed by ``Filename``, ``Size`` and the four digests (and a
  ``SileoDepiction`` link when the repository's address is set and the
  package has none of its own); and ``Packages.gz``, ``.xz``, ``.bz2``,
  ``.zst`` of it;
- ``Release``: Origin, Label, Date, ``Valid-Until`` when set, ``Acquire-By-Hash:
  yes``, and MD5Sum, SHA1, SHA256 and SHA512 of every index;
- ``InRelease`` and ``Release.gpg``, signed by every signing key;
- ``by-hash/ALGORITHM/DIGEST`` for every index, so a client never fetches an
  index that a rebuild replaced between its Release and its index.

Everything but the signatures is a function of the catalogue: the same
snapshot gives the same bytes on every worker and host (compressors run with
fixed settings and no time stamps; ``Date`` is the latest change to what the
repository holds, not the time of the build), so a Release fetched from one
worker and its Release.gpg from another agree.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime

import zstandard

from pkgcat.repository.debs import pool_path
from pkgcat.repository.depiction import depiction
from pkgcat.storage.served import ServedFile, Snapshot

COMPRESSIONS: dict[str, Callable[[bytes], bytes]] = {
    "": lambda data: data,
    ".gz": lambda data: gzip.compress(data, compresslevel=9, mtime=0),
    ".xz": lambda data: lzma.compress(data, preset=1),
    ".bz2": lambda data: bz2.compress(data, 9),
    ".zst": lambda data: zstandard.ZstdCompressor(level=9).compress(data),
}
"""Each Packages file's suffix and compressor (deterministic: no names, no times).

The levels are chosen for a rebuild of Debian main's size within seconds
(docs/benchmarks.md, "The served repository"): xz at preset 6 and zstd at level 19
took 56 s and 77 s of one CPU for 63 MB of text and bought a few per cent of size."""
COMPRESSORS = 4
"""Threads that compress one Packages text (each compressor releases the GIL)."""


@dataclass(frozen=True, slots=True)
class Made:
    """One index file made from a Packages text: its bytes, digests (by hashlib name), ETag."""

    body: bytes
    digests: dict[str, str]
    etag: str


Compressed = dict[str, Made]
"""A Packages text's files by suffix: the text itself (``""``) and each compression of it."""
MEDIA_TYPES = {
    "": "text/plain; charset=utf-8",
    ".gz": "application/gzip",
    ".xz": "application/x-xz",
    ".bz2": "application/x-bzip2",
    ".zst": "application/zstd",
}
HASHES = (("MD5Sum", "md5"), ("SHA1", "sha1"), ("SHA256", "sha256"), ("SHA512", "sha512"))
"""Release's digest fields (and by-hash folders), with hashlib's names."""
SIGNED = "application/pgp-signature"


INDEX_CACHE = "public, max-age=0, must-revalidate"
"""Indexes change with the catalogue: a cache keeps them but asks again (ETag) before each use."""
IMMUTABLE = "public, max-age=31536000, immutable"
"""By-hash indexes and free .debs: the same path always names the same bytes."""


@dataclass(frozen=True, slots=True)
class IndexFile:
    """One served file, with the headers of its answers made once (not on every request)."""

    body: bytes
    media_type: str
    etag: str
    modified: datetime
    immutable: bool = False
    """Named by its digest (by-hash): the same path always has the same bytes."""
    path: str | None = None
    """A file holding the same bytes, which the server may send from disk; None: none."""
    since: int = field(init=False, repr=False, compare=False)
    """``modified`` in whole seconds, as If-Modified-Since compares it."""
    tag: bytes = field(init=False, repr=False, compare=False)
    unchanged: tuple[tuple[bytes, bytes], ...] = field(init=False, repr=False, compare=False)
    """The headers of a 304."""
    headers: tuple[tuple[bytes, bytes], ...] = field(init=False, repr=False, compare=False)
    """The headers of a 200."""

    def __post_init__(self) -> None:
        common = (
            (b"etag", self.etag.encode()),
            (b"last-modified", format_datetime(self.modified, usegmt=True).encode()),
            (b"cache-control", (IMMUTABLE if self.immutable else INDEX_CACHE).encode()),
        )
        headers = (
            (b"content-type", self.media_type.encode()),
            (b"content-length", str(len(self.body)).encode()),
            *common,
        )
        for name, value in (
            ("since", int(self.modified.timestamp())),
            ("tag", self.etag.encode()),
            ("unchanged", common),
            ("headers", headers),
        ):
            object.__setattr__(self, name, value)


@dataclass(frozen=True, slots=True)
class PoolEntry:
    """A .deb a repository serves: where, what, and whether it needs a download grant."""

    sha256: str
    size: int
    source: str
    package: str
    version: str
    architecture: str
    paid: bool


@dataclass(slots=True)
class IndexSet:
    """Every file of every served repository, for one catalogue generation."""

    generation: int
    period: int
    """The Valid-Until period it was signed for (0: none)."""
    files: dict[str, IndexFile] = field(default_factory=dict)
    """By path under /repo/: ``Packages.gz``, ``sources/NAME/InRelease``, ``by-hash/SHA256/...``."""
    pool: dict[str, PoolEntry] = field(default_factory=dict)
    """By SHA-256."""
    signed: bool = False
    carried: set[str] = field(default_factory=set)
    """By-hash files kept from the set before (see :func:`carry_by_hash`)."""
    compressed: dict[str, Compressed] = field(default_factory=dict)
    """Each Packages text's compressions, by the text's SHA-256: a repository whose text
    did not change, or that holds the same text as another, is not compressed again."""


def entity_tag(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def stanza(file: ServedFile, depictions: str | None) -> str:
    """A Packages stanza: the control paragraph, then what the repository says of the file."""
    lines = [file.control]
    if depictions and "\nsileodepiction:" not in "\n" + file.control.lower():
        lines.append(f"SileoDepiction: {depictions}{file.package}.json")
    lines += [
        f"Filename: {pool_path(file.package, file.version, file.architecture, file.sha256)}",
        f"Size: {file.size}",
        f"MD5sum: {file.md5sum}",
        f"SHA1: {file.sha1}",
        f"SHA256: {file.sha256}",
        f"SHA512: {file.sha512}",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class Identity:
    """What every Release says of the repository."""

    label: str
    valid_seconds: int
    depictions: str | None
    """The public address of the depictions folder, or None."""


def release_time(when: datetime) -> str:
    """A Release time as Debian writes them: RFC 2822, in UTC, named ``UTC``."""
    return format_datetime(when.astimezone(UTC), usegmt=True).replace(" GMT", " UTC")


def _release(
    identity: Identity, files: dict[str, Made], date: datetime, architectures: Iterable[str]
) -> bytes:
    lines = [
        f"Origin: {identity.label}",
        f"Label: {identity.label}",
        "Suite: stable",
        "Codename: pkgcat",
        "Version: 1.0",
        f"Architectures: {' '.join(sorted(set(architectures))) or 'all'}",
        "Components: main",
        f"Description: {identity.label}",
        f"Date: {release_time(date)}",
    ]
    if identity.valid_seconds:
        until = datetime.fromtimestamp(date.timestamp() + identity.valid_seconds, UTC)
        lines.append(f"Valid-Until: {release_time(until)}")
    lines.append("Acquire-By-Hash: yes")
    for field_name, algorithm in HASHES:
        lines.append(f"{field_name}:")
        for name, made in files.items():
            lines.append(f" {made.digests[algorithm]} {len(made.body):>16} {name}")
    return ("\n".join(lines) + "\n").encode()


def compress_all(packages: bytes, known: dict[str, Compressed], pool: Executor) -> Compressed:
    """Every compression of a Packages text: from ``known`` when it was made before, else
    made now, the compressors side by side on ``pool``; added to ``known``."""
    key = hashlib.sha256(packages).hexdigest()
    found = known.get(key)
    if found is None:
        jobs = {
            suffix: pool.submit(_make, compress, packages)
            for suffix, compress in COMPRESSIONS.items()
        }
        found = known[key] = {suffix: job.result() for suffix, job in jobs.items()}
    return found


def _make(compress: Callable[[bytes], bytes], packages: bytes) -> Made:
    """One compression with its digests and ETag, all in the calling thread (hashlib and the
    compressors release the GIL on large inputs, so the threads work side by side)."""
    body = compress(packages)
    digests = {algorithm: hashlib.new(algorithm, body).hexdigest() for _, algorithm in HASHES}
    return Made(body, digests, entity_tag(body))


def _repository(
    prefix: str,
    served: list[ServedFile],
    identity: Identity,
    date: datetime,
    sign: Callable[[bytes], tuple[bytes, bytes]] | None,
    out: IndexSet,
    previous: dict[str, Compressed],
    pool: Executor,
    stanzas: dict[str, str],
) -> None:
    """One repository's files into ``out``, under ``prefix`` (``""`` or ``sources/NAME/``)."""
    packages = "\n".join(stanzas[file.sha256] for file in served).encode()
    key = hashlib.sha256(packages).hexdigest()
    if key not in out.compressed and key in previous:
        out.compressed[key] = previous[key]
    made = compress_all(packages, out.compressed, pool)
    indexes = {f"Packages{suffix}": one for suffix, one in made.items()}
    architectures = {f.architecture for f in served if f.architecture != "all"}
    release = _release(identity, indexes, date, architectures)
    files = out.files
    for name, one in indexes.items():
        index = IndexFile(one.body, MEDIA_TYPES[name.removeprefix("Packages")], one.etag, date)
        files[prefix + name] = index
        for field_name, algorithm in HASHES:
            files[f"{prefix}by-hash/{field_name}/{one.digests[algorithm]}"] = IndexFile(
                one.body, index.media_type, index.etag, date, immutable=True
            )
    files[prefix + "Release"] = IndexFile(release, MEDIA_TYPES[""], entity_tag(release), date)
    if sign is not None:
        inline, detached = sign(release)
        files[prefix + "InRelease"] = IndexFile(inline, MEDIA_TYPES[""], entity_tag(inline), date)
        files[prefix + "Release.gpg"] = IndexFile(detached, SIGNED, entity_tag(detached), date)


def build(
    snapshot: Snapshot,
    identity: Identity,
    sign: Callable[[bytes], tuple[bytes, bytes]] | None,
    *,
    period: int = 0,
    previous: IndexSet | None = None,
) -> IndexSet:
    """Every repository's files from one snapshot; ``sign`` makes (InRelease, Release.gpg).

    ``period``: the start (unix seconds) of the current Valid-Until period, a
    floor under every Date so that a repository that has not changed is still
    re-signed ahead of its expiry. ``previous``: the set served now, whose
    compressions of unchanged Packages texts are taken over rather than made again.
    """
    found = IndexSet(snapshot.generation, period, signed=sign is not None)
    by_source: dict[str, list[ServedFile]] = {}
    for file in snapshot.files:
        by_source.setdefault(file.source, []).append(file)
        found.pool[file.sha256] = PoolEntry(
            file.sha256,
            file.size,
            file.source,
            file.package,
            file.version,
            file.architecture,
            file.paid,
        )

    def latest(files: list[ServedFile]) -> datetime:
        changed = max(
            [snapshot.keys_changed, period, *(max(f.stored_at, f.updated_at) for f in files)]
        )
        return datetime.fromtimestamp(changed, UTC)

    before = previous.compressed if previous is not None else {}
    # Each file's stanza once, whichever repositories list it.
    stanzas = {file.sha256: stanza(file, identity.depictions) for file in snapshot.files}
    with ThreadPoolExecutor(COMPRESSORS, thread_name_prefix="pkgcat-compress") as pool:
        parts = (before, pool, stanzas)
        _repository("", snapshot.files, identity, latest(snapshot.files), sign, found, *parts)
        for source, files in by_source.items():
            when = latest(files)
            _repository(f"sources/{source}/", files, identity, when, sign, found, *parts)
    # One depiction per package: of the version details shows, else of its last file listed.
    chosen: dict[str, ServedFile] = {}
    for file in snapshot.files:
        if file.package not in chosen or file.version == file.shown_version:
            chosen[file.package] = file
    for package, file in chosen.items():
        body = depiction(file)
        found.files[f"depictions/{package}.json"] = IndexFile(
            body, "application/json", entity_tag(body), latest([file])
        )
    return found


def carry_by_hash(new: IndexSet, old: IndexSet | None) -> None:
    """Keep the previous set's own by-hash files, so that a client that read the previous
    Release just before the rebuild still finds its indexes; older ones are let go."""
    if old is None:
        return
    for name, index in old.files.items():
        if index.immutable and name not in new.files and name not in old.carried:
            new.files[name] = index
            new.carried.add(name)
