"""The large index files on disk, so that the server sends them as it sends static files.

A worker builds its index set in memory (:mod:`pkgcat.repository.indexes`). Each
file of at least :data:`SMALLEST` bytes (the ``Packages`` files, and their
by-hash names) is also written to the index directory, named by its ETag (a
digest of its bytes), and answered with ASGI's ``http.response.pathsend``: the
server reads it from disk, rather than taking 13 MB out of Python on every
request. A server without the extension, or a request whose file has gone, is
answered from memory.

Files are written under a temporary name, then renamed: a reader never sees
part of one. Workers and hosts that share the directory write the same bytes
under the same name. A file this process did not write is checked against its
name before it is used. Every build touches the files it uses; a file that this
worker's sets (current and previous) do not use and that no build has touched for
:data:`KEEP_SECONDS` is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from pkgcat.repository.indexes import IndexSet, entity_tag

SMALLEST = 64 * 1024
"""Bytes from which a file is sent from disk; a smaller one costs less sent from memory."""
KEEP_SECONDS = 600
"""How long a file no build uses is kept (another worker may still serve it)."""
_INCOMING = ".incoming-"


class IndexDirectory:
    """The index directory of one worker (shared with others on the same host)."""

    def __init__(
        self,
        root: Path,
        *,
        smallest: int = SMALLEST,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.root = root
        self.smallest = smallest
        """Bytes from which a file is written (and sent from disk)."""
        self._clock = clock
        self._known: set[str] = set()
        """Names this process wrote or checked."""

    def place(self, built: IndexSet, previous: IndexSet | None) -> None:
        """Give each large file of ``built`` its file on disk (written when missing or
        damaged), then remove the files no longer used."""
        paths: dict[str, str] = {}
        for name, index in list(built.files.items()):
            if index.path is not None or len(index.body) < self.smallest:
                continue
            file = index.etag.strip('"')
            if file not in paths:
                paths[file] = self._write(file, index.body)
            built.files[name] = dataclasses.replace(index, path=paths[file])
        self.sweep(_used(built), _used(previous))

    def _write(self, name: str, body: bytes) -> str:
        target = self.root / name
        try:
            if name not in self._known and entity_tag(target.read_bytes()) != f'"{name}"':
                raise FileNotFoundError(target)  # damaged: written again
            os.utime(target)
        except FileNotFoundError:
            self.root.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=_INCOMING, dir=self.root)
            try:
                with os.fdopen(handle, "wb") as out:
                    out.write(body)
                os.replace(temporary, target)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
                raise
        self._known.add(name)
        return str(target)

    def sweep(self, *keep: Iterable[str]) -> None:
        """Remove the files outside ``keep`` that no build has touched for a while."""
        kept = {name for names in keep for name in names}
        limit = self._clock() - KEEP_SECONDS
        if not self.root.is_dir():
            return  # nothing written yet
        with os.scandir(self.root) as entries:
            for entry in entries:
                if entry.name in kept:
                    continue
                with contextlib.suppress(FileNotFoundError):  # another worker's sweep was first
                    if entry.stat().st_mtime < limit:
                        os.unlink(entry.path)
                        self._known.discard(entry.name)


def _used(served: IndexSet | None) -> set[str]:
    if served is None:
        return set()
    return {Path(index.path).name for index in served.files.values() if index.path is not None}
