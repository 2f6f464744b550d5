"""Every SQL write of ingestion, through SQLAlchemy Core (portable: SQLite and PostgreSQL).

- :mod:`~pkgcat.storage.writes.sources`: the one rule for creating and updating a source,
  shared by ``pkgcat source add`` and ``pkgcat import-repo``;
- :mod:`~pkgcat.storage.writes.imports`: a repository import's read of what a source holds,
  and the apply step that writes the import's plan in short transactions;
- :mod:`~pkgcat.storage.writes.operator`: the operator's purchases, statistics and prices;
- :mod:`~pkgcat.storage.writes.removal`: deleting sources and applications, refused while
  anything depends on them unless cascading;
- :mod:`~pkgcat.storage.writes.bulk`: many rows through one statement;
- :mod:`~pkgcat.storage.writes.outbox`: webhook events, in the transaction of their change.

:mod:`pkgcat.ingest` reads, verifies and parses, and hands what it checked to these
modules (``operator`` imports nothing of it: it is given the validation of
:mod:`pkgcat.ingest.operator_data` to run in its transaction). The submodules are not
imported here, so that importing one of them does not pull in the others.
"""
