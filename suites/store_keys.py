"""The store's schema: every ``bench.*`` MLflow tag the suite writes or reads, with its meaning, in one place (as
mlperf_logging keeps its keys). Metric names are gpu_probe's vocabulary (``gpu_probe/vocab.py``); params are a
run's flattened configuration. A key here is the only spelling of it in the code (``tests/test_layout.py``
finds no ``"bench.…"`` literal outside this module); it sits low, beside ``validity.py``, so that whatever writes or
reads a run (``run/``'s marks and comparisons, ``record/``, the commands) names the same key. Values stay as stored:
results already in a store read the same."""

from __future__ import annotations

from suites.run_kinds import RunKind

__all__ = [
    "ANSWER", "CHECK_PART", "CLOCK_EVENTS", "COMMAND", "COMPARED_A", "COMPARED_B", "COMPARISON", "COMPARISON_PARENT",
    "COMPLETES", "DATA_SOURCE", "EPISODE", "ESTIMATES_FROM", "EXPORTED_RUNNING", "FAILURE", "FALLBACK_FOR",
    "GPU_STATUS", "GUEST", "GUEST_ID", "HOST_BUSY", "IMPORTED_FROM", "IMPORTED_TO", "IMPORT_DONE", "IMPORT_OF",
    "INCOMPLETE", "INCONCLUSIVE", "KIND", "LAUNCHER", "MARKS", "PARENT", "PHASE", "PIXELS", "REPEAT", "ROLE",
    "RUN_DIR", "SCENARIO", "SCENARIO_RUN", "SIZING_KEY", "SIZING_PART", "SKIPS", "STATUS", "STOPPED", "STUDY_PART",
    "SWEEP", "TITLE", "VALIDITY", "VALUES", "VALIDITY_REASON", "check", "children_filter", "tag_filter", "time_basis",
    "validity_of", "verdict", "viewset",
]

# --- what a run is ------------------------------------------------------------------------------------------------
ROLE = "bench.role"  # its place in a run tree: guest, scenario, comparison, sweep, study, sizing, gpu-check
KIND = "bench.kind"  # what a parent run holds, as a reader asks for it: a RunKind of run_kinds.STORED (a parent run
# carries both: ROLE says where it sits, KIND what it measured)
SCENARIO = "bench.scenario"  # the scenario a phase or comparison ran (single, gpu-vs-cpu, mixed, consolidation...)
PHASE = "bench.phase"  # a comparison's phase label of a scenario run (1-gpu, cpu, n2...)
PARENT = "mlflow.parentRunId"  # MLflow's own tag on a nested run: its parent's id (none on a root run)
REPEAT = "bench.repeat"  # which repeat of its phase a scenario run is (1-based)
GUEST_ID = "bench.guest_id"  # a guest run's id within its scenario (g0, g1...)
LAUNCHER = "bench.launcher"  # what started the guests (process, vm, ray, slurm)
RUN_DIR = "bench.run_dir"  # the run directory it wrote, absolute (make compare finds a run by it)
STUDY_PART = "bench.study_part"  # a study's part a comparison ran for
EPISODE = "bench.episode"  # the reference study's episode (1, 2) of a study part
SIZING_KEY = "bench.sizing_key"  # what makes a stored consolidation one sizing part's measurement (reuse)
SIZING_PART = "bench.sizing_part"  # a sizing part's label: profile/policy[/user type]
CHECK_PART = "bench.check_part"  # the gpu-check check (b1, h...) a run was made by, nested under its gpu-check run
COMMAND = "bench.command"  # on a run a person launched (a root): the command line that ran it (make publish)
TITLE = "bench.title"  # the headline a report opens with (a sizing's: "not a GPU sizing" where it is not)

# --- what ROLE holds: a run's place in a run tree (KIND's values, and the roles that are kinds, are
# suites/run_kinds.py's RunKind) ------------------------------------------------------------------------------------
GUEST = "guest"  # one guest's run, nested under its scenario run
SCENARIO_RUN = "scenario"  # one scenario run (a bench run, or a phase's repeat under a comparison)
SWEEP = "sweep"  # a Hydra sweep's summary run
COMPARISON = RunKind.COMPARISON  # a comparison's parent run (its phases nested under it); KIND is its scenario's kind
# every ROLE value, as stored: these, and a campaign's or command's own run (RunKind.STUDY, SIZING, GPU_CHECK, COMPARE)
VALUES = (GUEST, SCENARIO_RUN, COMPARISON, SWEEP)

# --- how it went --------------------------------------------------------------------------------------------------
STATUS = "bench.status"  # a guest's or scenario's outcome: ok, failed, partial
FAILURE = "bench.failure"  # why a run failed, in one line
STOPPED = "bench.stopped"  # why a sizing or study stopped before its end (interrupted, deadline, a failed part)
INCOMPLETE = "bench.incomplete"  # recording failed here; the whole run is in the fallback store
CLOCK_EVENTS = "bench.clock_events"  # the GPU clock event reasons NVML reported during the run (JSON)
SKIPS = "bench.skips"  # a study's parts not run and why (JSON list of [what, why])
ESTIMATES_FROM = "bench.estimates_from"  # where a study's time estimates came from (JSON)
ANSWER = "bench.answer"  # a sizing's recommendation line
COMPARED_A, COMPARED_B = "bench.compared_a", "bench.compared_b"  # the runs a make compare run set side by side

# --- what the figures are worth -----------------------------------------------------------------------------------
VALIDITY = "bench.validity"  # enforced, emulated, not enforced (the weakest of its phases for a parent)
VALIDITY_REASON = "bench.validity_reason"  # why the profile was not enforced where it was not
HOST_BUSY = "bench.host_busy"  # other processes loaded the host during the run: how much ("no" where none did)
INCONCLUSIVE = "bench.inconclusive"  # why a figure or answer is inconclusive (its verdict voided)
MARKS = "bench.marks"  # every mark on a score (busy, smoke, overlap, missed target...), one text
DATA_SOURCE = "bench.data_source"  # real data or the synthetic stand-in
GPU_STATUS = "bench.gpu_status"  # the GPU the run saw, or why it saw none
PIXELS = "bench.pixels"  # a CAD guest's pixel check over its viewsets: ok | mismatch

# --- the fallback store, sync and exports -------------------------------------------------------------------------
FALLBACK_FOR = "bench.fallback_for"  # a run recorded in the fallback store because this store could not be written
COMPARISON_PARENT = "bench.comparison_parent"  # a fallback run's parent in the store it was meant for
COMPLETES = "bench.completes"  # a fallback run that completes a half-written run of the main store
IMPORTED_TO = "bench.imported_to"  # a fallback run already copied (where to), so sync copies it once
IMPORTED_FROM = "bench.imported_from"  # a copied run's source run id
IMPORT_OF, IMPORT_DONE = "bench.import_of", "bench.import_done"  # an export's import: its root, and whole
EXPORTED_RUNNING = "bench.exported_running"  # a run exported while still running (what had finished by then)

# --- keys with a name in them -------------------------------------------------------------------------------------
VALIDITY_PREFIX = "bench.validity."


def validity_of(phase: str) -> str:
    """A comparison's phase's validity (enforced, emulated, not enforced)."""
    return VALIDITY_PREFIX + phase


def verdict(phase: str, figure: str) -> str:
    """A comparison's verdict on a phase's ratio to the baseline: ``figure`` throughput or time."""
    return f"bench.verdict.{phase}.{figure}"


def time_basis(phase: str) -> str:
    """What a phase's time ratio compares: train time, or time per image where phases were sized by time."""
    return f"bench.time_basis.{phase}"


def viewset(name: str) -> str:
    """A CAD guest's pixel verdict on one viewset: ok | mismatch."""
    return f"bench.viewset.{name}"


def check(name: str) -> str:
    """A gpu-check row's result on its parent run."""
    return f"bench.check.{name}"


def tag_filter(key: str, value: str) -> str:
    """An MLflow search filter on one tag (its key back-quoted: the dots)."""
    return f"tags.`{key}` = '{value}'"


def children_filter(parent: str) -> str:
    """An MLflow search filter for the runs nested directly under ``parent`` (MLflow's own parent tag)."""
    return f"tags.{PARENT} = '{parent}'"
