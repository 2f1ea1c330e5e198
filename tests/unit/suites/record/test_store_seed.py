"""Tests of ``suites/record/store_seed.py``: a new local store is a copy of MLflow's empty one, made once per MLflow
version, and the same store MLflow makes itself; a file is never written over, a template that is no empty store of
this MLflow is made again, and where none can be made the store is MLflow's own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from suites.record import store_seed
from suites.record.store import Tracker


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own cache: the user's template is never touched here."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "gpu-mixed-bench" / "mlflow-store"


def schema(db: Path) -> tuple[list[tuple[str, str, list[str]]], list[tuple[str]], list[tuple[str, str]]]:
    """The store's tables and indexes as sqlite holds them (each statement's lines sorted: the order of a table's
    CHECK constraints that MLflow's migrations recreate follows the process's hash seed, one store of MLflow's own
    to the next), its migration, its experiments (name, artifact root)."""
    with sqlite3.connect(db) as con:
        return (sorted((t, n, sorted(sql.rstrip(", )\n").split("\n"))) for t, n, sql in
                       con.execute("select type, name, coalesce(sql, '') from sqlite_master")),
                con.execute("select version_num from alembic_version").fetchall(),
                sorted(con.execute("select name, artifact_location from experiments")))


def test_a_seeded_store_is_the_store_mlflow_makes_itself(cache: Path, tmp_path: Path):
    seeded, own = tmp_path / "seeded" / "mlflow.db", tmp_path / "own" / "mlflow.db"
    seeded.parent.mkdir()
    own.parent.mkdir()
    Tracker(f"sqlite:///{seeded}", "gpu-mixed-bench", tmp_path / "art")  # seeds it: no file was there
    assert store_seed.template_path().parent == cache and store_seed.is_template(store_seed.template_path())
    from mlflow.tracking import MlflowClient

    MlflowClient(f"sqlite:///{own}").search_experiments()  # MLflow's own: its tables and ~70 migrations
    Tracker(f"sqlite:///{own}", "gpu-mixed-bench", tmp_path / "art")
    (tables_s, version_s, exps_s), (tables_o, version_o, exps_o) = schema(seeded), schema(own)
    assert tables_s == tables_o and version_s == version_o and len(tables_s) > 30
    # the Default experiment MLflow adds on opening, and the suite's, each where its own store puts it
    assert [name for name, _ in exps_s] == [name for name, _ in exps_o] == ["Default", "gpu-mixed-bench"]
    assert dict(exps_s)["gpu-mixed-bench"] == dict(exps_o)["gpu-mixed-bench"] == (tmp_path / "art").as_uri()
    with sqlite3.connect(store_seed.template_path()) as con:  # the template: tables only, no experiment
        assert con.execute("select count(*) from experiments").fetchone() == (0,)
    assert seeded.stat().st_mode & 0o777 == own.stat().st_mode & 0o777  # readable as sqlite's own file is


def test_a_file_is_never_written_over(cache: Path, tmp_path: Path):
    db = tmp_path / "mlflow.db"
    db.write_bytes(b"someone else's")
    assert store_seed.seed(db) is False and db.read_bytes() == b"someone else's"
    assert not store_seed.template_path().exists()  # nothing made for a store that is not new


def test_a_template_that_is_no_store_is_made_again(cache: Path, tmp_path: Path):
    cache.mkdir(parents=True)
    store_seed.template_path().write_bytes(b"#!/bin/sh\nrm -rf ~\n")  # a template is read as data: not sqlite
    assert store_seed.seed(tmp_path / "a.db") is True
    assert store_seed.is_template(store_seed.template_path())
    big = tmp_path / "big.db"  # an sqlite file past the bound is no template either
    big.write_bytes(store_seed.SQLITE_HEADER + b"\0" * store_seed.MAX_TEMPLATE_BYTES)
    assert not store_seed.is_template(big)
    tracker = Tracker(f"sqlite:///{tmp_path / 'a.db'}", "gpu-mixed-bench", tmp_path / "art")
    assert tracker.client.get_experiment(tracker.experiment_id).name == "gpu-mixed-bench"


def test_a_template_at_another_migration_or_without_mlflows_tables_is_made_again(cache: Path, tmp_path: Path):
    cache.mkdir(parents=True)
    with sqlite3.connect(store_seed.template_path()) as con:  # an sqlite file at a migration MLflow never made
        con.execute("create table alembic_version (version_num varchar(32) not null)")
        con.execute("insert into alembic_version values ('not-a-revision')")
    assert not store_seed.is_template(store_seed.template_path())
    db = tmp_path / "mlflow.db"
    tracker = Tracker(f"sqlite:///{db}", "gpu-mixed-bench", tmp_path / "art")
    assert tracker.client.get_experiment(tracker.experiment_id).name == "gpu-mixed-bench"
    assert schema(db)[1] != [("not-a-revision",)] and store_seed.is_template(store_seed.template_path())
    with sqlite3.connect(store_seed.template_path()) as con:  # the head migration, a table gone
        con.execute("drop table metrics")
    assert not store_seed.is_template(store_seed.template_path())


def test_no_cache_to_write_leaves_the_store_to_mlflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a cache folder that cannot be made
    db = tmp_path / "mlflow.db"
    assert store_seed.seed(db) is False and not db.exists()
    tracker = Tracker(f"sqlite:///{db}", "gpu-mixed-bench", tmp_path / "art")
    assert tracker.client.get_experiment(tracker.experiment_id).name == "gpu-mixed-bench"


def test_a_template_mlflow_fails_to_make_leaves_the_store_to_mlflow(cache: Path, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch):
    def broken(db: Path) -> None:
        db.write_bytes(b"half")
        raise RuntimeError("an SQLAlchemy error, say")

    monkeypatch.setattr(store_seed, "initialise", broken)
    db = tmp_path / "mlflow.db"
    assert store_seed.seed(db) is False and not db.exists()
    assert not store_seed.template_path().exists() and list(cache.iterdir()) == []  # nothing half-made left
    tracker = Tracker(f"sqlite:///{db}", "gpu-mixed-bench", tmp_path / "art")
    assert tracker.client.get_experiment(tracker.experiment_id).name == "gpu-mixed-bench"
