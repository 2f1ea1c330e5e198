"""Which runs ``make compare`` reads: a run id or a run directory, the two newest of a kind on this machine, or every
run of this machine that holds a figure (a history); and the two runs' figures set side by side. A question the
store cannot answer is one LookupError line (the command's ``error:``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from gpu_probe.inventory import Inventory
from suites import bundle
from suites import store_keys as keys
from suites.compare import results, setups
from suites.compare.results import RunFigures
from suites.record.export import RUN_ID
from suites.record.store_reader import StoredRun, StoreReader
from suites.run_kinds import LAUNCHED

__all__ = ["figures_of", "latest", "machine_runs", "resolve"]

MAX_RUNS = 1000  # launched runs (roots) a history or --latest reads, newest first; their nested runs not counted


def figures_of(store: StoreReader, experiment: str, given: str) -> RunFigures:
    """``given`` read: a result bundle (a file: make publish's, or another site's), else a run of the store."""
    if Path(given).is_file():
        try:
            return results.from_bundle(bundle.read(Path(given)))
        except bundle.BundleError as exc:
            raise LookupError(str(exc)) from None
    return results.read(store, resolve(store, experiment, given))


def resolve(store: StoreReader, experiment: str, given: str) -> StoredRun:
    """``given`` (a run id, or a run directory that a run is named after) as the run a person launched."""
    folder = Path(given)
    if folder.is_dir():
        path = str(folder.resolve())  # the run that wrote it (nested or not: gpu-check nests its runs under its
        # own), else (recorded before bench.run_dir) a top-level run named after it
        found = [r for r in store.in_dir(experiment, path) if results.kind_of(r)] or \
            [r for r in store.named(experiment, folder.resolve().name) if keys.PARENT not in r.tags
             and results.kind_of(r)]
        if not found:
            raise LookupError(f"{given}: no run of experiment {experiment!r} is named after this run directory "
                              "(give its run id, or --tracking-uri / --experiment of the store it was recorded in)")
        if len(found) > 1:  # never one of them picked in silence (round 7: the newest of 101 was)
            ids = ", ".join(r.run_id for r in found[:3]) + (", ..." if len(found) > 3 else "")
            raise LookupError(f"{given}: {len(found)}{'+' if len(found) >= 50 else ''} runs of experiment "
                              f"{experiment!r} name this run directory (newest first: {ids}): give the run id")
        return found[0]
    if not RUN_ID.match(given):
        raise LookupError(f"{given}: neither a run directory nor an MLflow run id")
    try:
        run = store.run(given)
    except Exception as exc:  # MLflow's RESOURCE_DOES_NOT_EXIST, or any other refusal of the id
        raise LookupError(f"{given}: no such run in this store ({str(exc).splitlines()[0][:120]})") from None
    if not results.kind_of(run):
        what = run.tags.get(keys.ROLE, "not a gpu-mixed-bench")
        raise LookupError(f"{given}: run {run.name!r} is a {what} run; compare takes a bench, comparison, study or "
                          "sizing run (the run a command launched)")
    return run


def this_machine(inv: Inventory) -> str:
    return setups.fingerprint(inv.as_params())


def machine_runs(store: StoreReader, experiment: str, machine: str, kind: str = "") -> Iterator[RunFigures]:
    """This machine's runs (of ``kind`` where given), newest first, each read as it is reached."""
    for run in store.roots(experiment, MAX_RUNS):
        if results.kind_of(run) and (not kind or results.kind_of(run) == kind):
            read = results.read(store, run)
            setup = read.setup if any(k.startswith("host.") for k in read.setup) else \
                {**host_of(store, run.run_id), **read.setup}  # a study's or sizing's own run: its scenarios' host
            if setups.fingerprint(setup) == machine:
                yield read


def host_of(store: StoreReader, run_id: str, depth: int = 3) -> dict[str, str]:
    """The host, library and profile params of the first scenario run under ``run_id`` (a sizing's or a study's
    own run records its answer, its scenario runs the machine they ran on); {} where none is found."""
    for child in store.children(run_id):
        if "host.git_sha" in child.params:
            return {k: v for k, v in child.params.items() if k.startswith(("host.", "lib.", "profile."))}
        found = host_of(store, child.run_id, depth - 1) if depth > 1 else {}
        if found:
            return found
    return {}


def latest(store: StoreReader, experiment: str, machine: str, kind: str) -> tuple[RunFigures, RunFigures]:
    """This machine's newest run of ``kind`` (of any kind where empty) and the newest before it of the same kind
    and scenario (a gpu-vs-cpu comparison is never paired with a mixed one): (older, newer)."""
    if kind and kind not in LAUNCHED:
        raise LookupError(f"--latest {kind}: a kind is one of {', '.join(LAUNCHED)}")
    runs: list[RunFigures] = []
    for read in machine_runs(store, experiment, machine, kind):
        if not runs or same_sort(read, runs[0]):
            runs.append(read)
        if len(runs) == 2:
            return runs[1], runs[0]
    what = (f"{runs[0].kind} run(s)" + (f" of scenario {scenario_of(runs[0])}" if scenario_of(runs[0]) != "?" else "")
            if runs else f"{kind or 'finished'} run(s)")
    raise LookupError(f"--latest: {len(runs)} {what} of this machine in experiment {experiment!r}; compare needs two")


def scenario_of(run: RunFigures) -> str:
    """The scenario a run ran (its comparison's, or its single scenario's)."""
    return run.run.tags.get(keys.SCENARIO) or run.run.params.get("scenario.name") or "?"


def same_sort(a: RunFigures, b: RunFigures) -> bool:
    """Two runs whose figures can be set side by side: one kind, one scenario."""
    return a.kind == b.kind and scenario_of(a) == scenario_of(b)
