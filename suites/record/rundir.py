"""The run directory: the first and always-written record of a run (before any tracking store is touched)."""

from __future__ import annotations

import json
import os
import stat
from dataclasses import asdict
from pathlib import Path

from gpu_probe.inventory import Inventory
from gpu_probe.sampler import SampleSet
from gpu_probe.shapes import JsonObject
from suites.backends.placement import Placement
from suites.guest.protocol import GuestResult, GuestSpec
from suites.run.outcome import GuestOutcome, ScenarioOutcome


def write_provenance(run_dir: Path, config_yaml: str, inventory: Inventory) -> None:
    """What the run was asked to do and where: the resolved config and the host/GPU inventory."""
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(run_dir / "config.yaml", config_yaml)
    write_atomic(run_dir / "inventory.json", json.dumps(inventory.as_dict(), indent=2, default=str))


def write_results(outcome: ScenarioOutcome, run_dir: Path) -> None:
    """``results.json`` (status, every guest's spec, placement, result and sampled aggregates) and ``samples.csv``."""
    s = outcome.samples
    results = {
        "status": outcome.status,
        "validity": outcome.validity,
        "host_busy": outcome.host_busy,  # "" on a quiet host
        "makespan_s": outcome.makespan_s,
        "started_at": outcome.started_at,  # epoch s: the run's guests being started ...
        "ended_at": outcome.ended_at,  # ... and all stopped (MLflow's start and end of the run)
        "reasons": outcome.reasons,
        "data": outcome.data,
        "gpu_status": outcome.inventory.gpu_status,
        "sampler": {"t0": s.t0, "requested_hz": s.rate_hz, "achieved_hz": s.achieved_hz, "samples": len(s.rows),
                    "errors": s.errors, "cpu_pct": s.cpu_pct, "clock_events": s.clock_events, "notes": s.notes},
        "host_metrics": outcome.host_metrics,  # host and GPU aggregates, energy: what MLflow gets, here too
        "guests": [{"spec": asdict(o.spec), "placement": asdict(o.placement), "result": o.result.as_dict(),
                    "sampled": o.sampled, "validity": o.validity} for o in outcome.guests],
    }
    run_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(run_dir / "results.json", json.dumps(results, indent=2, default=str))
    write_csv(s.rows, run_dir / "samples.csv")


def write_csv(rows: list[JsonObject], path: Path) -> None:
    import pandas as pd

    write_atomic(path, pd.DataFrame(rows).to_csv(index=False, float_format="%.4g"))


def write_atomic(path: Path, text: str) -> None:
    """``path`` holds all of ``text`` or is as it was: written beside it, then renamed over it. A disk that fills
    mid-write must not leave a 0-byte results.json, which readers would take for a result: the error reaches the
    caller (the run is recorded as failed with it) and the half-written file is removed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


MAX_RESULTS = 64 * 2**20  # a results.json: a few hundred KiB for a long mixed run


def read_json(path: Path) -> JsonObject | None:
    """A JSON object from a regular file of at most MAX_RESULTS bytes (no link, no FIFO); None where it is not one."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RESULTS:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_results(run_dir: Path) -> ScenarioOutcome | None:
    """The outcome :func:`write_results` wrote (its samples from samples.csv), or None where results.json is not
    there (a runner killed before it wrote one). The inventory is the run's own (inventory.json)."""
    results_path = run_dir / "results.json"
    if not results_path.is_file():
        return None
    r = json.loads(results_path.read_text())
    sampler, samples_path = r.get("sampler", {}), run_dir / "samples.csv"
    rows = read_csv(samples_path) if samples_path.is_file() and samples_path.stat().st_size else []
    samples = SampleSet(rows=rows, t0=sampler.get("t0", 0.0), rate_hz=sampler.get("requested_hz", 0.0),
                        achieved_hz=sampler.get("achieved_hz", 0.0), errors=sampler.get("errors", 0),
                        cpu_pct=sampler.get("cpu_pct", 0.0), clock_events=sampler.get("clock_events", {}),
                        notes=sampler.get("notes", []))
    guests = [GuestOutcome(GuestSpec(**g["spec"]), Placement(**g["placement"]), GuestResult(**g["result"]),
                           run_dir / f"{g['spec']['guest_id']}.log", g.get("sampled", {}), g["validity"])
              for g in r.get("guests", [])]
    return ScenarioOutcome(r["status"], guests, r.get("makespan_s"), list(r.get("reasons", [])),
                           read_inventory(run_dir), r.get("data", {}), samples, r.get("host_metrics", {}),
                           r.get("started_at", 0.0), r.get("ended_at", 0.0), r.get("host_busy", ""))


def read_inventory(run_dir: Path) -> Inventory:
    """The run's inventory.json (written before its guests started); one of unknowns where it is not there."""
    path = run_dir / "inventory.json"
    if not path.is_file():
        return Inventory("?", "?", "?", "?", 0, 0, 0, 0.0)
    return Inventory(**json.loads(path.read_text()))


def read_csv(path: Path) -> list[JsonObject]:
    import pandas as pd

    return pd.read_csv(path).to_dict("records")


def nothing_measured(run_dir: Path, why: str) -> ScenarioOutcome:
    """The outcome of a run that kept no results.json: no guest, ``why`` its reason."""
    return ScenarioOutcome("interrupted", [], None, [why], read_inventory(run_dir), {}, SampleSet())


def read_config(run_dir: Path) -> JsonObject:
    """The run's resolved config (config.yaml, written before its guests started), or {} without one."""
    import yaml

    path = run_dir / "config.yaml"
    config = yaml.safe_load(path.read_text()) if path.is_file() else None
    return config if isinstance(config, dict) else {}
