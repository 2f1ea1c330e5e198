"""A campaign as plain data: its named parts (each a composed comparison with its tags and planned seconds), the
parent run's kind, and how it is run (the whole host leased up front, a deadline, an export); and, as it runs, what
became of each part (:class:`PartRun`) under the parent run (:class:`CampaignRun`).

A command plans a :class:`Campaign` (pure: nothing starts), :func:`suites.campaign.executor.execute` runs it, and
the command reads its parts' runs back from the store to conclude (a study's report, a sizing's answer)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from suites.config.compose import Composition
from suites.pipeline.orchestrate import Nest
from suites.record import mlflow_runs
from suites.record.export import Known
from suites.record.store_reader import StoreReader
from suites.run.outcome import EXIT_INTERRUPTED
from suites.run_kinds import RunKind

# the campaign as it runs -> (a stored run that measured the same thing, what is in doubt in it: '' where nothing),
# or None: measure it
Reuse = Callable[["CampaignRun"], "tuple[str, str] | None"]

MEASURED, REUSED, SKIPPED, NOT_RUN = "measured", "reused", "skipped", "not run"


@dataclass
class CampaignPart:
    """One comparison of a campaign, composed before anything starts."""

    name: str  # said, tagged on its comparison run (Campaign.part_tag) and its folder's name ('/' made '-')
    comp: Composition
    tags: dict[str, str] = field(default_factory=dict)  # on its comparison run, beside its name
    estimate_s: float = 0.0  # planned seconds (0: none; the deadline then does not hold it back)
    title: str = ""  # how its progress line names it (its name where empty)
    reuse: Reuse | None = None  # a stored run of the same measurement, looked for before and after its lease
    # A part that runs a command of its own instead of ``comp``'s comparison (a gpu-check check, which starts the
    # suite's commands as processes that lease their own cores), given the campaign as it runs: its exit status.
    # ``comp`` then only names the store the campaign records into.
    action: Callable[[CampaignRun], int] | None = None

    @property
    def folder(self) -> str:
        return self.name.replace("/", "-")


@dataclass
class Campaign:
    """What a command asks to run: its parts, under one parent run of ``kind`` in ``<out_dir>/<time>``."""

    kind: RunKind  # the parent run's bench.kind and bench.role, and its name's prefix: study, sizing
    said: str  # how its lines begin: study, size
    out_dir: Path  # the root its run directory is made under
    parts: list[CampaignPart]
    part_tag: str  # the tag naming a part on its comparison run (bench.study_part, bench.sizing_part)
    noun: str = "comparison"  # what a part's run is called in its lines (a sizing's are consolidations)
    whole_host: bool = False  # every part placed, and every core leased, before the first starts (a study)
    # time.monotonic() by which the campaign has ended: a part whose estimate passes it does not start
    deadline: float = math.inf
    export: bool = False  # the run tree exported into the run directory after each part (a GPU host sends it back)
    left_out: list[str] = field(default_factory=list)  # what its plan left out, and why ("what: why")
    run_dir: Path | None = None  # its run directory where the command made it already (else <out_dir>/<time>)


@dataclass
class PartRun:
    """What became of one part."""

    name: str
    how: str  # measured, reused, skipped, not run
    run_id: str | None = None  # its comparison run (measured or reused)
    seconds: float = 0.0  # how long it took (measured only)
    why: str = ""  # why it was skipped or not run; what is in doubt in a reused run
    code: int = 0  # its exit status (measured only)


@dataclass
class CampaignRun:
    """A campaign as it runs: its run directory, the parent run (``nest``), each part's fate, why it stopped early."""

    campaign: Campaign
    run_dir: Path
    nest: Nest  # the recorder and the parent run the parts nest under
    parts: list[PartRun] = field(default_factory=list)
    stopped: str = ""  # why it stopped before its last part ('' where it did not)
    concluded: bool = False  # the command concluded it (an interrupt between parts or while concluding: not)
    exported: Known = field(default_factory=dict)  # the ended runs its exports after each part have read

    @property
    def code(self) -> int:
        """EXIT_INTERRUPTED where it was stopped, else the worst part's exit status."""
        return EXIT_INTERRUPTED if self.stopped else max([p.code for p in self.parts] or [0])

    def run_ids(self) -> dict[str, str]:
        """Part name -> its comparison run, measured or reused."""
        return {p.name: p.run_id for p in self.parts if p.run_id}

    def left(self, *hows: str) -> list[PartRun]:
        return [p for p in self.parts if p.how in hows]

    @cached_property
    def reader(self) -> StoreReader | None:
        """The store the parts are recorded into, read (one reader for the run: each part's lookups share it); None
        where nothing is recorded."""
        tracker = self.nest.recorder.tracker
        return StoreReader(tracker.uri) if tracker else None

    def record(self, results: mlflow_runs.ParentResults) -> None:
        """The campaign's own figures, params and tags on the parent run (before a report reads them back)."""
        self.nest.recorder.parent_results(self.nest.parent, results, self.run_dir)


def overran(planned: float, took: float) -> str:
    """'ran 2.4x its estimate' where a part took more than twice its planned seconds, else ''."""
    return f"ran {took / planned:.1f}x its estimate" if planned > 0 and took > 2 * planned else ""
