"""The repository's index files, built whole from one snapshot of the catalogue.

A build makes, for the whole catalogue (``/repo/``) and for each source with
stored files (``/repo/sources/NAME/``), a flat repository (``deb URL ./``):

- ``Packages``: one stanza per stored .deb of an online package, its control
  paragraph (``cydia::commercial`` in its ``Tag`` exactly when it is paid)
  followed by ``Filename``, ``Size`` and the four digests (and a
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
repository holds, not the time of the build: for an empty catalogue, when its first
source was made, and only for one with no source and no key, unsigned, the build's time), so a Release fetched from one
worker and its Release.gpg from another agree.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import orjson

from pkgcat.ingest.rendered import link_problem, served_control
from pkgcat.repository.debs import pool_path
from pkgcat.repository.depiction import depiction
from pkgcat.repository.pieces import FORMATS, cut, join
from pkgcat.repository.shop_view import drop_field, paged, sale_running, takes_over_depictions
from pkgcat.repository.tags import tagged
from pkgcat.repository.web_depiction import CONTENT_SECURITY_POLICY, web_depiction
from pkgcat.storage.served import ServedFile, ShopView, Snapshot

COMPRESSIONS: dict[str, Callable[[bytes], bytes]] = {
    "": lambda data: data,
    **{suffix: form.whole for suffix, form in FORMATS.items()},
}
"""Each Packages file's suffix, and its compressor for a whole text at once (a build
compresses pieces and joins them: :mod:`pkgcat.repository.pieces`)."""
COMPRESSORS = 4
"""Threads that compress pieces (each compressor releases the GIL)."""


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


HTML = "text/html; charset=utf-8"
PAGE_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
)
"""A web depiction's own headers: it runs no script, and loads only its screenshots."""
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
    extra: tuple[tuple[bytes, bytes], ...] = ()
    """More headers of its 200s (a web page's Content-Security-Policy)."""
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
            *self.extra,
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
    hidden: bool = False
    """A version withdrawn or above the one served: only through a download URL."""


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
    """Each Packages text's files, by the text's SHA-256: a repository whose text did not
    change, or that holds the same text as another, is not made again."""
    depicted: dict[str, int] = field(default_factory=dict)
    """Each package's depiction, by what it was made from (see :func:`_depicted`): a
    depiction whose package did not change is not made again."""
    pieces: dict[bytes, dict[str, Any]] = field(default_factory=dict)
    """Each piece of the Packages texts compressed in each format, by the piece's digest:
    a piece that did not change is not compressed again."""
    media: frozenset[str] = frozenset()
    """The uploaded images served under ``media/`` (``DIGEST.png``), from the blob store."""
    changes_at: int | None = None
    """When a sale starts or ends next: the depictions and prices change then, so the set is
    built again from then on even if the catalogue has not moved."""
    served: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    """Each file's control paragraph as served, by the file's SHA-256: the ``hash`` of the
    stored one, and the served one when :func:`served_control` changed it (None: as
    stored). A paragraph that did not change is not looked at again."""


def entity_tag(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def _has(control: str, name: str) -> bool:
    """Whether the control paragraph has the field (names compared without case)."""
    return f"\n{name.lower()}:" in "\n" + control.lower()


def stanza(
    file: ServedFile,
    depictions: str | None,
    control: str | None = None,
    view: ShopView | None = None,
    media: str | None = None,
) -> str:
    """A Packages stanza: the control paragraph (its ``Tag`` saying whether the package is
    paid: :mod:`pkgcat.repository.tags`), then what the repository says of the file.

    The paragraph as :func:`~pkgcat.ingest.rendered.served_control` serves it (``control``,
    when made already): a row stored before the rules on rendered fields loses what
    breaks them here. With the repository's address, the depictions it serves where the file
    names none of its own: ``SileoDepiction`` (Sileo's native one) and ``Depiction`` (the web
    page, the only one Zebra v1 reads: ``Zebra/Parsel/parsel.c`` on branch v1, line 376 at
    c615ab4); and the catalogue's icon where the file has no ``Icon`` (an https address only).
    """
    control = served_control(file.control) if control is None else control
    if view is not None:
        control = paged(control, file, view, media)
        if depictions and takes_over_depictions(view):
            control = drop_field(drop_field(control, "SileoDepiction"), "Depiction")
    lines = [tagged(control, file.paid)]
    if depictions and not _has(control, "SileoDepiction"):
        lines.append(f"SileoDepiction: {depictions}{file.package}.json")
    if depictions and not _has(control, "Depiction"):
        lines.append(f"Depiction: {depictions}{file.package}.html")
    if file.icon and link_problem(file.icon, https_only=True) is None and not _has(control, "Icon"):
        lines.append(f"Icon: {file.icon}")
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
    store_name: str | None = None
    """The store's name when the deployment sells: the web depictions say how to buy."""
    media: str | None = None
    """The public address of the uploaded images (``.../repo/media/``), or None."""


def release_time(when: datetime) -> str:
    """A Release time as Debian writes them: RFC 2822, in UTC, named ``UTC``."""
    return format_datetime(when.astimezone(UTC), usegmt=True).replace(" GMT", " UTC")


IOS_ARCHITECTURES = ("iphoneos-arm", "iphoneos-arm64")
"""What a repository whose every file is ``all`` lists: the devices' own (rootful, rootless)."""


def _release(
    identity: Identity,
    files: dict[str, Made],
    date: datetime,
    architectures: Iterable[str],
    name: str | None = None,
) -> bytes:
    """``name``: a source's, for its own repository (Sileo names a repository by its
    Origin and Label); the whole catalogue's is the configured label."""
    label = name or identity.label
    # apt skips a repository whose Architectures lack the device's: never only "all".
    listed = sorted(set(architectures) - {"all"}) or list(IOS_ARCHITECTURES)
    lines = [
        f"Origin: {label}",
        f"Label: {label}",
        "Suite: stable",
        "Codename: pkgcat",
        "Version: 1.0",
        f"Architectures: {' '.join(listed)}",
        "Components: main",
        f"Description: {label}",
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


def featured_banners(banners: list[dict[str, str]]) -> bytes:
    """``sileo-featured.json``: the banners atop a repository's page in Sileo and Zebra.

    Sileo shows them only for this class and a non-empty ``banners`` list (Sileo/Sileo
    ``Sileo/UI/Packages/CategoryViewController.swift``, ``FeaturedBannersView``); each banner
    is ``url`` (its image), ``title`` and ``package``. With no banner set the document is
    still valid, so a client's request for it is answered, not a 404.
    """
    return orjson.dumps(
        {
            "class": "FeaturedBannersView",
            "itemSize": "{263, 148}",
            "itemCornerRadius": 8,
            "banners": [{**banner, "hideShadow": False} for banner in banners],
        }
    )


def _piece_key(piece: bytes) -> bytes:
    return hashlib.blake2b(piece, digest_size=16).digest()


def compress_all(
    pieces: list[bytes], out: IndexSet, previous: IndexSet | None, pool: Executor
) -> Compressed:
    """Every file of the Packages text that is ``pieces`` joined: taken from ``out`` or
    ``previous`` when made there, else joined from its pieces compressed in every format,
    each piece taken from ``out`` or ``previous`` when compressed there, else compressed
    now on ``pool``. What it makes or takes is kept in ``out``, for the next build."""
    text = b"".join(pieces)
    keys = [_piece_key(piece) for piece in pieces]
    key = hashlib.blake2b(b"".join(keys), digest_size=16).hexdigest()  # the text's digest
    made, before = out.pieces, previous.pieces if previous is not None else {}
    jobs = {}
    for piece_key, piece in zip(keys, pieces, strict=True):
        if piece_key in made:
            continue
        if piece_key in before:
            made[piece_key] = before[piece_key]
            continue
        made[piece_key] = {}
        for suffix, form in FORMATS.items():
            jobs[piece_key, suffix] = pool.submit(form.piece, piece)
    for (piece_key, suffix), job in jobs.items():
        made[piece_key][suffix] = job.result()
    found = out.compressed.get(key)
    if found is None and previous is not None:
        found = previous.compressed.get(key)
    if found is None:
        files = {"": pool.submit(_made, text)}
        for suffix in FORMATS:
            compressed = [made[piece_key][suffix] for piece_key in keys]
            files[suffix] = pool.submit(_joined, suffix, compressed, text)
        found = {suffix: job.result() for suffix, job in files.items()}
    out.compressed[key] = found
    return found


def _joined(suffix: str, pieces: list[Any], text: bytes) -> Made:
    return _made(join(suffix, pieces, text))


def _made(body: bytes) -> Made:
    """A file with its digests and ETag, made in the calling thread (hashlib releases the
    GIL on large inputs, so the threads work side by side)."""
    digests = {algorithm: hashlib.new(algorithm, body).hexdigest() for _, algorithm in HASHES}
    return Made(body, digests, entity_tag(body))


def _repository(
    prefix: str,
    served: list[ServedFile],
    identity: Identity,
    date: datetime,
    sign: Callable[[bytes], tuple[bytes, bytes]] | None,
    out: IndexSet,
    previous: IndexSet | None,
    pool: Executor,
    stanzas: dict[str, bytes],
    banners: tuple[tuple[str, str, str, str], ...] = (),
) -> None:
    """One repository's files into ``out``, under ``prefix`` (``""`` or ``sources/NAME/``);
    ``banners``: the catalogue's, of which it shows those of packages it lists (and, for a
    source's repository, of that source)."""
    pieces = cut((file.sha256, stanzas[file.sha256]) for file in served)
    made = compress_all(pieces, out, previous, pool)
    indexes = {f"Packages{suffix}": one for suffix, one in made.items()}
    architectures = {f.architecture for f in served}
    source = prefix.removeprefix("sources/").removesuffix("/") or None
    release = _release(identity, indexes, date, architectures, source)
    files = out.files
    for name, one in indexes.items():
        index = IndexFile(one.body, MEDIA_TYPES[name.removeprefix("Packages")], one.etag, date)
        files[prefix + name] = index
        for field_name, algorithm in HASHES:
            files[f"{prefix}by-hash/{field_name}/{one.digests[algorithm]}"] = IndexFile(
                one.body, index.media_type, index.etag, date, immutable=True
            )
    files[prefix + "Release"] = IndexFile(release, MEDIA_TYPES[""], entity_tag(release), date)
    listed = {file.package for file in served}
    featured = featured_banners(
        [
            {"url": image, "title": title, "package": package}
            for owner, package, image, title in banners
            if package in listed and (source is None or owner == source)
        ]
    )
    files[prefix + "sileo-featured.json"] = IndexFile(
        featured, "application/json", entity_tag(featured), date
    )
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
    now: int | None = None,
) -> IndexSet:
    """Every repository's files from one snapshot; ``sign`` makes (InRelease, Release.gpg).

    ``period``: the start (unix seconds) of the current Valid-Until period, a
    floor under every Date so that a repository that has not changed is still
    re-signed ahead of its expiry. ``previous``: the set served now, whose
    compressions of unchanged Packages texts are taken over rather than made again.
    """
    found = IndexSet(snapshot.generation, period, signed=sign is not None, media=snapshot.media)
    now = int(time.time()) if now is None else now
    found.changes_at = min(
        (
            when
            for view in snapshot.shops.values()
            if view.sale is not None
            for when in (view.sale.starts_at, view.sale.ends_at)
            if when > now
        ),
        default=None,
    )
    by_source: dict[str, list[ServedFile]] = {}
    listed: list[ServedFile] = []
    for file in snapshot.files:
        found.pool[file.sha256] = PoolEntry(
            file.sha256,
            file.size,
            file.source,
            file.package,
            file.version,
            file.architecture,
            file.paid,
            file.hidden,
        )
        if file.hidden:
            continue
        listed.append(file)
        by_source.setdefault(file.source, []).append(file)

    def latest(files: list[ServedFile], floor: int = 0) -> datetime:
        changed = max(
            [
                floor,
                snapshot.keys_changed,
                period,
                *(max(f.stored_at, f.updated_at) for f in files),
            ]
        )
        return datetime.fromtimestamp(changed, UTC)

    # Each file's stanza once, whichever repositories list it.
    looked = previous.served if previous is not None else {}

    def control_of(file: ServedFile) -> str:
        stored = hash(file.control)
        known = looked.get(file.sha256)
        if known is None or known[0] != stored:
            control = served_control(file.control)
            known = (stored, None if control is file.control else control)
        found.served[file.sha256] = known
        return file.control if known[1] is None else known[1]

    shops = snapshot.shops
    stanzas = {
        file.sha256: stanza(
            file, identity.depictions, control_of(file), shops.get(file.package), identity.media
        ).encode()
        for file in listed
    }
    with ThreadPoolExecutor(COMPRESSORS, thread_name_prefix="pkgcat-compress") as pool:
        parts = (previous, pool, stanzas, snapshot.banners)
        # An empty catalogue is dated by its first source; one with no source and no key
        # (nothing signed, nothing to agree on) by this build: never 1970.
        unsigned_and_new = not snapshot.began and not snapshot.keys_changed
        whole = latest(listed, int(time.time()) if unsigned_and_new else snapshot.began)
        _repository("", listed, identity, whole, sign, found, *parts)
        for source, files in by_source.items():
            when = latest(files)
            _repository(f"sources/{source}/", files, identity, when, sign, found, *parts)
    # One depiction per package: of the version details shows, else of its last file listed.
    chosen: dict[str, ServedFile] = {}
    for file in listed:
        if file.package not in chosen or file.version == file.shown_version:
            chosen[file.package] = file
    before = previous.depicted if previous is not None else {}
    for package, file in chosen.items():
        name = f"depictions/{package}.json"
        view = shops.get(package)
        on_sale = sale_running(view, now)
        made_from = found.depicted[package] = _depicted(
            file, snapshot.keys_changed, period, (view, on_sale, identity.media)
        )
        if before.get(package) == made_from and previous is not None:
            found.files[name] = previous.files[name]
            page_name = f"depictions/{package}.html"
            found.files[page_name] = previous.files[page_name]
            continue
        body = depiction(file, view, on_sale, identity.media)
        found.files[name] = IndexFile(body, "application/json", entity_tag(body), latest([file]))
        page = web_depiction(file, identity.store_name, view, on_sale, identity.media)
        found.files[f"depictions/{package}.html"] = IndexFile(
            page, HTML, entity_tag(page), latest([file]), extra=PAGE_HEADERS
        )
    return found


def _depicted(file: ServedFile, keys_changed: int, period: int, shop: object = None) -> int:
    """A digest of everything a depiction and its Last-Modified are made from (``shop``:
    what its seller set, and whether its sale runs now)."""
    return hash(
        (
            shop,
            file.sha256,
            file.name,
            file.description,
            file.long_description,
            file.screenshots,
            file.shown_version,
            file.author,
            file.section,
            file.size,
            file.paid,
            file.price,
            file.currency,
            file.stored_at,
            file.updated_at,
            keys_changed,
            period,
        )
    )


def carry_by_hash(new: IndexSet, old: IndexSet | None) -> None:
    """Keep the previous set's own by-hash files, so that a client that read the previous
    Release just before the rebuild still finds its indexes; older ones are let go."""
    if old is None:
        return
    for name, index in old.files.items():
        if index.immutable and name not in new.files and name not in old.carried:
            new.files[name] = index
            new.carried.add(name)
