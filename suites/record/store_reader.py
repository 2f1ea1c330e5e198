"""The store read back for the commands, typed: a run as plain data (:class:`StoredRun`) and the few questions the
commands ask of a store (the newest finished run of a kind with a tag, a run's children, a comparison's phases).
MLflow's client stays inside ``record/``; a command holds a :class:`StoreReader`, never a client."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from suites import store_keys as keys
from suites.record import reader
from suites.run.phase_numbers import PhaseNumbers

__all__ = ["StoreReader", "StoredRun"]

FINISHED = "attributes.status = 'FINISHED'"  # an MLflow search filter: the runs that ended well
ROOTS_PAGE = 1000  # runs a page of the search for roots holds (a root of 480 nested runs takes one page of it)


@dataclass
class StoredRun:
    run_id: str
    experiment_id: str
    name: str
    status: str  # RUNNING, FINISHED, FAILED, KILLED
    start_time_ms: int
    tags: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


def stored_run(run: Any) -> StoredRun:
    info, data = run.info, run.data
    return StoredRun(info.run_id, info.experiment_id, info.run_name or "", info.status, int(info.start_time or 0),
                     dict(data.tags), dict(data.params), dict(data.metrics))


class StoreReader:
    """One store (a tracking URI), read."""

    def __init__(self, tracking_uri: str) -> None:
        from mlflow.tracking import MlflowClient

        self.uri = tracking_uri
        self.client = MlflowClient(tracking_uri)

    def run(self, run_id: str) -> StoredRun:
        return stored_run(self.client.get_run(run_id))

    def children(self, parent: str) -> list[StoredRun]:
        """The runs nested directly under ``parent``, oldest first."""
        exp = self.client.get_run(parent).info.experiment_id
        runs = self.client.search_runs([exp], keys.children_filter(parent), max_results=1000,
                                       order_by=["attributes.start_time ASC"])
        return [stored_run(r) for r in runs]

    def child(self, parent: str, key: str, value: str) -> str | None:
        """The id of a run nested under ``parent`` whose tag ``key`` is ``value``."""
        exp = self.client.get_run(parent).info.experiment_id
        runs = self.client.search_runs([exp], f"{keys.children_filter(parent)} and {keys.tag_filter(key, value)}")
        return runs[0].info.run_id if runs else None

    def _newest_first(self, experiment: str, where: str, limit: int) -> list[Any]:
        """MLflow's runs of ``experiment`` matching the filter ``where``, newest first ([] without the experiment)."""
        exp = self.client.get_experiment_by_name(experiment)
        if exp is None:
            return []
        return self.client.search_runs([exp.experiment_id], where, max_results=limit,
                                       order_by=["attributes.start_time DESC"])

    def newest_finished(self, experiment: str, kind: str, key: str, value: str) -> str | None:
        """The id of the newest FINISHED ``kind`` run of ``experiment`` whose tag ``key`` is ``value``."""
        runs = self._newest_first(experiment, keys.tag_filter(keys.KIND, kind) + " and " + FINISHED, 200)
        return next((r.info.run_id for r in runs if r.data.tags.get(key) == value), None)

    def latest(self, experiment: str, kind: str) -> StoredRun | None:
        run = reader.latest(self.client, experiment, kind)
        return stored_run(run) if run is not None else None

    def of_kind(self, run_id: str, kind: str, flag: str) -> StoredRun:
        """``run_id``, which must be a ``kind`` run; else one LookupError saying what it is."""
        return stored_run(reader.run_of_kind(self.client, run_id, kind, flag))

    def phases(self, comparison_id: str, skipped: list[str]) -> dict[str, list[PhaseNumbers]]:
        """A comparison's phases, every repeat reduced to PhaseNumbers (values that are not numbers in ``skipped``)."""
        return reader.phase_numbers(self.client, comparison_id, skipped)

    def header(self, comparison_id: str) -> dict[str, str]:
        """Host, GPU, date and git SHA of a comparison's runs, as a report heads them."""
        rep = reader.MixedReport()
        reader.describe(self.client, self.client.get_run(comparison_id), rep)
        return rep.header

    def in_dir(self, experiment: str, run_dir: str) -> list[StoredRun]:
        """The runs of ``experiment`` that wrote the run directory ``run_dir`` (absolute), newest first."""
        return [stored_run(r) for r in self._newest_first(experiment, keys.tag_filter(keys.RUN_DIR,
                                                                                  run_dir.replace("'", "")), 50)]

    def named(self, experiment: str, suffix: str) -> list[StoredRun]:
        """The runs of ``experiment`` whose name ends with ``suffix`` (a run directory's name: a scenario's run is
        named after it, a comparison's and a campaign's ``<kind>-<its name>``), newest first."""
        pattern = suffix.replace("'", "")
        if not pattern:  # '/': LIKE '%' would match every run (as '_' did: the names are checked below)
            return []
        runs = self._newest_first(experiment, f"attributes.run_name LIKE '%{pattern}'", 50)
        return [stored_run(r) for r in runs if (r.info.run_name or "").endswith(suffix)]  # '_' and '%' as written

    def roots(self, experiment: str, limit: int = 500) -> list[StoredRun]:
        """The FINISHED runs of ``experiment`` nested under no other (a bench run, a comparison, a study, a sizing:
        what a person launched), newest first."""
        exp = self.client.get_experiment_by_name(experiment)
        out: list[StoredRun] = []
        token = None
        while exp is not None and len(out) < limit:  # the limit counts roots: a comparison's nested runs are many
            page = self.client.search_runs([exp.experiment_id], FINISHED, max_results=ROOTS_PAGE,
                                           order_by=["attributes.start_time DESC"], page_token=token)
            out += [stored_run(r) for r in page if keys.PARENT not in r.data.tags]
            token = page.token
            if not token:
                break
        return out[:limit]
