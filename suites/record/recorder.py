"""One Recorder per command: every record goes to the run directory, then to the MLflow store.

As NVIDIA's dllogger fans one logger out to its backends, the Recorder fans
a record out to the run directory (always first, so a tracking failure never
loses a measurement) and to a store. The fallback policy is written once,
here: when the store given by ``tracking_uri`` cannot be opened or dies mid-run,
this and every later record of the command go to ``fallback_tracking_uri``
(tagged ``bench.fallback_for``, imported later by ``python -m suites sync``);
when neither works, the run directory alone holds the results, and a warning
says so.
"""

from __future__ import annotations

import os
import shlex
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites import store_keys as keys
from suites.config.paths import absolute_uri, launch_dir
from suites.config.schema import TRACKING_URI, BenchConfig
from suites.errors import first_line, redact
from suites.record import mlflow_runs, owed, rundir
from suites.record.store import Tracker, local_store, store_lock
from suites.run.outcome import ScenarioOutcome

T = TypeVar("T")
Say = Callable[[str], None]


def rescue_dir(run_dir: Path) -> Path:
    """Where a run's results go when its own folder cannot take them: the system's temporary folder (another
    disk, most often), named after the run and this process."""
    return Path(tempfile.gettempdir()) / "gpu-mixed-bench-rescued" / f"{run_dir.name}-{os.getpid()}"


@dataclass
class RunRef:
    """A run in one store (a comparison's run, which phases nest under)."""

    tracker: Tracker
    run_id: str
    name: str = ""
    tags: dict[str, str] = field(default_factory=dict)


class Recorder:
    def __init__(self, cfg: BenchConfig, say: Say) -> None:
        self.say = say
        self.default_uri = absolute_uri(TRACKING_URI, launch_dir())  # the store `make ui` opens by itself
        self.uri = local_store(cfg.tracking_uri)
        self.fallback_uri = local_store(cfg.fallback_tracking_uri)
        self.experiment, self.artifact_root = cfg.experiment, Path(cfg.artifact_dir)
        self.tracker: Tracker | None = None
        try:
            self.tracker = Tracker(self.uri, self.experiment, self.artifact_root)
        except Exception as exc:
            self._fall_back(exc)
        if self.tracker is not None and self.tracker.uri == self.uri:  # what killed runners left owed this store
            owed.collect((self.uri, self.experiment), lambda: self.tracker, say)  # type: ignore[arg-type,return-value]

    def browse(self) -> str:
        """How to look at what was recorded, in the store it went to (the fallback store after a fall back: `make
        ui` alone opens the default store, where these runs are not)."""
        uri = self.tracker.uri if self.tracker is not None else self.uri
        if uri.startswith(("http:", "https:")):
            return f"browse {redact(uri)}"
        return "make ui to browse" if uri == self.default_uri else f"`make ui URI={shlex.quote(uri)}` to browse"

    # --- the run directory ------------------------------------------------------------------------
    @staticmethod
    def provenance(run_dir: Path, config_yaml: str, inventory: Inventory) -> None:
        rundir.write_provenance(run_dir, config_yaml, inventory)

    def local(self, outcome: ScenarioOutcome, run_dir: Path) -> Path | None:
        """results.json and samples.csv in ``run_dir``; where that fails (a disk that filled during the run, a
        folder removed), in a rescue folder under the system's temporary folder, said and recorded with the run
        as its reason. The folder that holds them, or None where neither could be written (the store, or the
        command's last line, then holds the figures)."""
        try:
            rundir.write_results(outcome, run_dir)
            return run_dir
        except OSError as exc:
            failed = f"results.json could not be written in {run_dir} ({exc.strerror or first_line(exc)})"
        rescue: Path | None = rescue_dir(run_dir)
        outcome.reasons.append(f"{failed}; kept in {rescue}")  # in the rescued results.json too
        try:
            rundir.write_results(outcome, rescue)
        except OSError as exc:
            outcome.reasons[-1] = f"{failed}; nor in {rescue} ({exc.strerror or first_line(exc)})"
            rescue = None
        self.say(f"warning: {outcome.reasons[-1]}")
        return rescue

    # --- the store ----------------------------------------------------------------------------------
    def owe(self, run_dir: Path, name: str, parent: RunRef | None, tags: dict[str, str]) -> str:
        """Note the scenario run this runner will owe its store (suites/record/owed.py), before its guests start;
        the note's key, for :func:`owed.paid` once :meth:`scenario` has recorded it."""
        under = parent.run_id if parent is not None else None
        return owed.owe_scenario((self.uri, self.experiment), run_dir, name, under, tags)

    def scenario(self, outcome: ScenarioOutcome, config_params: JsonObject, run_dir: Path, name: str,
                 parent: RunRef | None = None, tags: dict[str, str] | None = None) -> str | None:
        """The scenario's runs in the store (nested under ``parent`` where it lives); the run id, or None."""
        def record(t: Tracker) -> str:
            under = parent.run_id if parent is not None and parent.tracker is t else None
            extra = {**(tags or {}), **({keys.COMPARISON_PARENT: parent.run_id}
                                        if parent is not None and under is None else {})}
            return mlflow_runs.scenario_run(outcome, t, config_params, run_dir, mlflow_runs.Named(name, under, extra))

        return self._attempt(record, f"results kept in {run_dir}")

    def start_parent(self, name: str, tags: dict[str, str], parent: RunRef | None = None) -> RunRef | None:
        """A parent run, one that others nest under (a comparison's phases; a campaign's comparisons, as a study's
        or a sizing's), itself nested under ``parent`` where that lives in the same store."""
        def start(t: Tracker) -> RunRef:
            under = parent.run_id if parent is not None and parent.tracker is t else None
            run_id = t.start(name, tags, parent=under)
            owed.owe_end(t, run_id)  # paid by finish(); a runner killed before that leaves it to the next
            return RunRef(t, run_id, name, tags)

        return self._attempt(start, "the comparison's phases are recorded on their own")

    def parent_results(self, ref: RunRef | None, results: mlflow_runs.ParentResults,
                       run_dir: Path) -> RunRef | None:
        """Params, metrics, table and plot on the parent run in its own store, else in the fallback store
        on a run that ``bench.completes`` the half-written one (sync fills that one in). Where they landed."""
        if ref is None:
            return None

        def record(t: Tracker) -> RunRef:
            run_id = ref.run_id if ref.tracker is t else t.start(ref.name, {**ref.tags,
                                                                            keys.COMPLETES: ref.run_id})
            mlflow_runs.parent_results(t, run_id, results, run_dir)
            return RunRef(t, run_id, ref.name, ref.tags)

        return self._attempt(record, f"comparison run not completed; table and plot are in {run_dir}")

    def whole_run(self, name: str, tags: dict[str, str], params: JsonObject, files: list[Path],
                  started_at: float) -> str | None:
        """A run written whole after the fact (a sweep's summary): its params and files, ended FINISHED, its
        Duration from ``started_at`` (epoch s) to now; in the fallback store where its own fails. Its id, or None."""
        def record(t: Tracker) -> str:
            with store_lock(t.uri):
                run_id = t.start(name, tags, start_time=started_at)
                t.params(run_id, params)
                for f in files:
                    t.artifact(run_id, f)
                t.end(run_id, "FINISHED", time.time())
            return run_id

        return self._attempt(record, f"run {name} not recorded; its files are {', '.join(map(str, files))}")

    def finish(self, ref: RunRef | None, report: list[Path], status: str) -> None:
        """The report's files under ``report/``, then the run's end."""
        if ref is None:
            return
        try:
            for f in report:
                ref.tracker.artifact(ref.run_id, f, "report")
            ref.tracker.end(ref.run_id, status)
            owed.paid(owed.owe_key(ref.run_id))
        except Exception as exc:
            self.say(f"warning: comparison run {ref.run_id} not ended in MLflow ({first_line(exc)})")

    def stopped(self, ref: RunRef | None, why: str, report: Sequence[Path] = ()) -> None:
        """A run an interrupt stopped: ``why`` (``bench.stopped``: the signal's name), the report's files, its end
        KILLED (a run already ended FINISHED is ended again: never FINISHED, so never reused)."""
        if ref is None:
            return
        try:
            ref.tracker.tag(ref.run_id, keys.STOPPED, why)
        except Exception as exc:
            self.say(f"warning: run {ref.run_id}'s reason not recorded ({first_line(exc)})")
        self.finish(ref, list(report), "KILLED")

    # --- the fallback policy --------------------------------------------------------------------------
    def _attempt(self, record: Callable[[Tracker], T], lost: str) -> T | None:
        """``record`` in the current store; if that store fails, once more in the fallback store."""
        while self.tracker is not None:
            tracker = self.tracker
            try:
                return record(tracker)
            except Exception as exc:  # never lose the run to a tracking error: the run directory has it
                if tracker.fallback_for or not self._fall_back(exc):
                    self.say(f"warning: MLflow recording failed ({first_line(exc)}); {lost}")
                    return None
        return None

    def _fall_back(self, exc: Exception) -> bool:
        """Switch to the fallback store for the rest of this command; False when there is none to use."""
        self.tracker = None
        uri, fallback = redact(self.uri), redact(self.fallback_uri)  # what is printed and tagged: no credentials
        if self.fallback_uri == self.uri:
            self.say(f"warning: MLflow store {uri} unusable ({first_line(exc)}); results stay in the run directory")
            return False
        try:
            self.tracker = Tracker(self.fallback_uri, self.experiment, self.artifact_root, fallback_for=uri)
        except Exception as exc2:
            self.say(f"warning: MLflow stores {uri} and {fallback} unusable ({first_line(exc2)}); results stay in "
                     "the run directory")
            return False
        self.say(f"warning: MLflow store {uri} unreachable ({first_line(exc)}); recording to the fallback store "
                 f"{fallback}; import later: `python -m suites sync --from {fallback} --to {uri}`")
        return True
