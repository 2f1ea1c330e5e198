"""A new local sqlite store seeded from an empty one MLflow made once per MLflow version.

MLflow creates a new sqlite store by creating its tables and running every one of its schema migrations through
alembic: 1.2 s on a 2-core host, paid by every fresh store (each first command of a user, each test's store, the
first round of ``make bench-harness``), where opening an existing store takes 0.05 s. The tables MLflow makes are
the same for every store of one MLflow version, so they are made once, by MLflow's own initialisation
(``mlflow.store.db.utils._initialize_tables``, what ``SqlAlchemyStore`` runs on a store without its tables), into a
template in this user's cache (``$XDG_CACHE_HOME/gpu-mixed-bench/mlflow-store/<version>.db``, as the VM image cache);
a new store is a copy of it. The template holds no experiment: MLflow adds its Default one when it opens the copy,
with the copy's own artifact root, as it does in a store it made itself.

The template is this suite's own file but read as data: one that is not an sqlite file of at most
:data:`MAX_TEMPLATE_BYTES`, at MLflow's head migration, with every table MLflow's models name, is made again.
Nothing here ever writes over an existing file: a store another process made meanwhile is left as it is (the copy is
linked into place, which fails where a file is).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import sqlite3
from pathlib import Path

__all__ = ["MAX_TEMPLATE_BYTES", "is_template", "seed", "template_path"]

MAX_TEMPLATE_BYTES = 16 * 2**20  # MLflow 3.17's empty store is ~0.5 MiB
SQLITE_HEADER = b"SQLite format 3\x00"


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpu-mixed-bench" / "mlflow-store"


def template_path() -> Path:
    """The template of this MLflow version (made or not)."""
    import mlflow  # imported already where a store opens: its version even without a dist-info (BARE=1's wheels)

    return cache_root() / f"mlflow-{mlflow.__version__}.db"


def is_template(path: Path) -> bool:
    """An sqlite file within the size bound, at this MLflow's head migration, holding every table its models name."""
    try:
        if not path.is_file() or not 0 < path.stat().st_size <= MAX_TEMPLATE_BYTES:
            return False
        with path.open("rb") as f:
            if f.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                return False
        with contextlib.closing(sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)) as con:
            tables = {name for (name,) in con.execute("select name from sqlite_master where type = 'table'")}
            version = con.execute("select version_num from alembic_version").fetchall()
    except (OSError, sqlite3.Error):
        return False
    try:
        from mlflow.store.db import utils

        return version == [(utils._get_latest_schema_revision(),)] and set(utils.Base.metadata.tables) <= tables
    except Exception:  # MLflow's own state, whatever it raises: no template, MLflow makes the store
        return False


def made_template() -> Path | None:
    """This MLflow version's template, made where it is missing or not one (None: it could not be made, say a
    read-only home: MLflow then makes the store itself)."""
    path = template_path()
    if is_template(path):
        return path
    name = beside(path, ".tmp")  # sqlite makes the file
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            initialise(name)
            os.replace(name, path)  # whole or not at all: a reader never sees a half-made template
        finally:
            name.unlink(missing_ok=True)  # its error (no such folder) is the one below
    except Exception:  # a disk, SQLAlchemy or MLflow error: no template, MLflow makes the store
        return None
    return path if is_template(path) else None


def beside(path: Path, suffix: str) -> Path:
    """A hidden name in ``path``'s folder that no other process (nor this one's next call) uses: where a file is
    made before it is moved or linked into place."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{suffix}")


def initialise(db: Path) -> None:
    """MLflow's tables, migrated to its head, in the new sqlite file ``db``, as ``SqlAlchemyStore`` makes them."""
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables

    engine = sqlalchemy.create_engine(f"sqlite:///{db}")
    try:
        _initialize_tables(engine)
    finally:
        engine.dispose()


def seed(db: Path) -> bool:
    """``db``, where no file is, made a copy of the template; True where it was (False: a file was there, or no
    template could be made, and MLflow makes the store as ever)."""
    if db.exists():
        return False
    template = made_template()
    if template is None:
        return False
    name = beside(db, ".seed")
    try:
        db.parent.mkdir(parents=True, exist_ok=True)
        # made as sqlite makes a new file (0666 less the umask: mkstemp's 0600 would shut out a group's reader)
        with os.fdopen(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as out, \
                template.open("rb") as src:
            shutil.copyfileobj(src, out)
        os.link(name, db)  # fails where a file appeared meanwhile: it is never written over
    except OSError:
        return False
    finally:
        name.unlink(missing_ok=True)
    return True
