"""Damaged stores, refused in one line that names the file.

Damage that shows on disk is refused before the database opens (``check_store_dir``):
a ``store.sqlite`` that is not a SQLite file, is shorter than its own header says
(truncated), or is empty beside existing blobs. Damage inside the file (pages
overwritten, a truncation SQLite's header cannot tell) shows only when a query first
reads a damaged page: every store connection is a ``StoreConnection``, whose cursors
turn SQLite's corruption errors into a ``StoreError`` naming the file, wherever the
query runs (a CLI command, the explorer, an export).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.errors import StoreError

DB_NAME = "store.sqlite"
BLOB_DIR = "blobs"
_SQLITE_HEADER = b"SQLite format 3\x00"
_HEADER_BYTES = 100
#: SQLite's primary result codes that mean the file cannot be read as a database.
_DAMAGE_CODES = {10: "SQLITE_IOERR", 11: "SQLITE_CORRUPT", 26: "SQLITE_NOTADB"}
_FIX = "restore it from a backup or use a new store folder"


def wal_path(db: Path) -> Path:
    return db.with_name(db.name + "-wal")


def check_store_dir(path: str | Path) -> None:
    """Refuse a folder that is not a store we can open: a store.sqlite that is empty beside
    existing blobs, truncated, or not a SQLite database (a missing folder is a new store)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise StoreError(f"expected a store folder, got {path}, which is a file; "
                         "point at a store directory")
    db = path / DB_NAME
    if not db.exists():
        return
    if not db.is_file():
        raise StoreError(f"expected {db} to be the store's SQLite file, got a folder; "
                         "point at a store directory")
    size = db.stat().st_size
    blobs = path / BLOB_DIR
    if size == 0 and blobs.is_dir() and any(blobs.iterdir()):
        raise StoreError(f"expected the store database {db} to hold the store, got an empty file "
                         f"beside existing blobs in {blobs}; restore the database from a backup or "
                         "use a new store folder")
    if size == 0:
        return
    with db.open("rb") as handle:
        header = handle.read(_HEADER_BYTES)
    if not header.startswith(_SQLITE_HEADER) or len(header) < _HEADER_BYTES or size < 512:
        raise StoreError(f"expected a SQLite database at {db}, got a file that is not one "
                         f"({size} bytes); {_FIX}")
    expected = _size_in_header(header)
    wal = wal_path(db)
    # With a write-ahead log the file may legitimately lag the header until a checkpoint.
    if expected is not None and size < expected and not (wal.exists() and wal.stat().st_size):
        raise StoreError(f"expected the store database {db} to hold {expected} bytes as its "
                         f"header says, got {size} (it was truncated); {_FIX}")


def verify_store(path: str | Path) -> None:
    """``check_store_dir``, then SQLite's own check of every page (``PRAGMA quick_check``,
    read-only): for commands about to write into a store, so that damage deep inside is
    refused before any episode runs rather than found half-way."""
    check_store_dir(path)
    db = Path(path) / DB_NAME
    if not db.is_file() or db.stat().st_size == 0:
        return
    conn = connect(db, read_only=True, timeout_s=60.0)
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check(3)").fetchall()]
    finally:
        conn.close()
    if problems != ["ok"]:
        raise StoreError(f"expected a readable store database at {db}, got damage: "
                         f"{'; '.join(problems)}; {_FIX}")


def _size_in_header(header: bytes) -> int | None:
    """The database size SQLite's header records, in bytes; None where it is not valid."""
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65_536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    valid = header[24:28] == header[92:96]  # the change counter matches version-valid-for
    return page_size * pages if valid and pages and page_size >= 512 else None


def damage_error(db: Path, exc: sqlite3.DatabaseError, *, immutable: bool = False) -> StoreError | None:
    """The StoreError for a SQLite error that says the file is damaged; None for others
    (a busy database, a constraint, a read-only folder)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None or code & 0xFF not in _DAMAGE_CODES:
        return None
    if immutable and wal_path(db).exists():
        # Read without locks (see TrajectoryStore): a writer started meanwhile, so the
        # pages may have been changing under the read rather than damaged.
        return StoreError(f"expected {db} to stay unchanged while it was read, got a writer "
                          "that opened it meanwhile; run the command again")
    return StoreError(f"expected a readable store database at {db}, got {exc} "
                      f"({_DAMAGE_CODES[code & 0xFF]}); {_FIX}")


class StoreCursor(sqlite3.Cursor):
    """A cursor whose corruption errors name the store's file (see ``damage_error``)."""

    def _damaged(self, exc: sqlite3.DatabaseError) -> BaseException:
        conn = self.connection
        error = damage_error(conn.db, exc, immutable=conn.immutable)  # type: ignore[attr-defined]
        return exc if error is None else error

    def execute(self, sql: str, parameters: Any = (), /) -> StoreCursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> StoreCursor:
        try:
            return super().executemany(sql, seq_of_parameters)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size)
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from exc


class StoreConnection(sqlite3.Connection):
    """The connection of a store: its ``execute`` runs on a ``StoreCursor``."""

    db: Path = Path(DB_NAME)
    #: opened with immutable=1 (read-only, no locks): see TrajectoryStore's read_only
    immutable: bool = False

    def cursor(self, factory: Any = StoreCursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> StoreCursor:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> StoreCursor:
        return self.cursor().executemany(sql, seq_of_parameters)


def connect(db: Path, *, read_only: bool, timeout_s: float) -> StoreConnection:
    """A connection to ``db``. Read-only connections write nothing, not even SQLite's
    own files: with no write-ahead log beside the database (every write checkpointed
    into it), the file is opened immutable (no ``-wal``/``-shm`` is created, which also
    lets a read-only folder be read); with one, it is read through the log."""
    if read_only:
        immutable = not wal_path(db).exists()
        mode = "immutable=1" if immutable else "mode=ro"
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?{mode}", uri=True, isolation_level=None,
                               timeout=timeout_s, factory=StoreConnection)
    else:
        immutable = False
        conn = sqlite3.connect(db, isolation_level=None, timeout=timeout_s, factory=StoreConnection)
    conn.db, conn.immutable = db, immutable
    return conn
