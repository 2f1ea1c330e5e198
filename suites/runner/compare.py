"""Comparison scenarios: run each phase, then normalise every phase to the baseline.

Each phase is composed from the same command-line overrides plus its own, so
it is exactly the run a user would get by typing those overrides; it is
recorded as its own scenario run, nested under one comparison run that holds
the normalised table (CSV) and plot (PNG).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpu_probe import vocab
from gpu_probe.stats import summarize
from suites.config import BenchConfig, load
from suites.runner.study import all_phases
from suites.scenario import PhaseConfig

if TYPE_CHECKING:
    from suites.runner.execute import ScenarioOutcome


def compose_phase(base_overrides: list[str], phase: PhaseConfig) -> tuple[BenchConfig, Any]:
    """The phase's config: the command line, then the phase's overrides, with no further phases."""
    overrides = [o for o in base_overrides if not o.startswith(("hydra.", "hydra/"))]
    overrides += [*phase.overrides, "scenario.phases=[]", "scenario.baseline=null", "scenario.kind=plain"]
    return compose_with(overrides, phase.mix)


def compose_with(overrides: list[str], mix: list[Any] | None = None) -> tuple[BenchConfig, Any]:
    """Compose configs/config.yaml with these overrides (and a guest mix, which the override grammar cannot
    express comfortably), inside or outside the running Hydra app."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():  # inside the Hydra app
        dcfg = compose("config", overrides=overrides)
    else:
        from suites.bench import CONFIG_DIR

        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            dcfg = compose("config", overrides=overrides)
    if mix:
        dcfg.scenario.mix = list(mix)  # typed node: OmegaConf validates the GuestGroup dataclasses
    return load(dcfg), dcfg


@dataclass
class PhaseRow:
    label: str
    profile: str
    guests: int
    status: str
    images_per_sec: float  # all guests together
    train_time_s: float  # the slowest guest: when the phase's work was done
    guest_cpu_pct: float  # mean over guests, 100 = one core
    host_cpu_pct: float
    gpu_util_pct: float
    time_x: float = math.nan  # train time / baseline's
    throughput_x: float = math.nan  # images/s / baseline's


def phase_row(label: str, outcome: "ScenarioOutcome") -> PhaseRow:
    ok = [o for o in outcome.guests if o.result.ok]
    host = outcome.sampler.aggregate()
    gpu = summarize(v for k, v in host.items() if k.startswith("gpu") and k.endswith(f"{vocab.GPU_UTIL.key}.mean"))
    return PhaseRow(
        label=label,
        profile=outcome.guests[0].spec.profile if outcome.guests else "?",
        guests=len(outcome.guests),
        status=outcome.status,
        images_per_sec=sum(o.result.metrics.get("images_per_sec", 0.0) for o in ok) if ok else math.nan,
        train_time_s=max((o.result.metrics.get("train_time_s", math.nan) for o in ok), default=math.nan),
        guest_cpu_pct=summarize(o.sampled.get("cpu_pct.mean") for o in outcome.guests).mean,
        host_cpu_pct=host.get(f"{vocab.HOST_CPU.key}.mean", math.nan),
        gpu_util_pct=gpu.mean,
    )


def normalise(rows: list[PhaseRow], baseline: str | None) -> list[PhaseRow]:
    base = next((r for r in rows if r.label == baseline), rows[0] if rows else None)
    for r in rows:
        if base is not None:
            r.time_x = r.train_time_s / base.train_time_s if base.train_time_s else math.nan
            r.throughput_x = r.images_per_sec / base.images_per_sec if base.images_per_sec else math.nan
    return rows


def table(rows: list[PhaseRow], title: str) -> Any:
    from rich.table import Table

    from suites.runner.report import fmt

    t = Table(title=title, title_justify="left")
    for col in ("phase", "profile", "guests", "status", "images/s", "x baseline", "train s", "x baseline",
                "guest CPU %", "host CPU %", "GPU util %"):
        t.add_column(col, justify="left" if col in ("phase", "profile", "status") else "right")
    for r in rows:
        t.add_row(r.label, r.profile, str(r.guests), r.status, fmt(r.images_per_sec, "{:,.0f}"),
                  fmt(r.throughput_x, "{:.2f}"), fmt(r.train_time_s, "{:.1f}"), fmt(r.time_x, "{:.2f}"),
                  fmt(r.guest_cpu_pct, "{:.0f}"), fmt(r.host_cpu_pct, "{:.0f}"), fmt(r.gpu_util_pct, "{:.0f}"))
    return t


def write_csv(rows: list[PhaseRow], path: Path) -> None:
    import pandas as pd

    pd.DataFrame([r.__dict__ for r in rows]).to_csv(path, index=False, float_format="%.4g")


def plot(rows: list[PhaseRow], path: Path, title: str) -> None:
    """Normalised throughput and time per phase, and CPU use, as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [r.label for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    xs = range(len(rows))
    ax1.bar([x - 0.2 for x in xs], [r.throughput_x for r in rows], 0.4, label="images/s")
    ax1.bar([x + 0.2 for x in xs], [r.time_x for r in rows], 0.4, label="train time")
    ax1.axhline(1.0, color="black", lw=0.8)
    ax1.set_ylabel("x baseline")
    ax2.bar(xs, [r.guest_cpu_pct for r in rows], 0.5, color="C2")
    ax2.set_ylabel("guest CPU % (100 = one core)")
    for ax in (ax1, ax2):
        ax.set_xticks(list(xs), labels, rotation=15)
        ax.grid(axis="y", alpha=0.3)
    ax1.legend(fontsize=8)
    fig.suptitle(title)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def record_comparison(tracker: Any, comparison: str, cfg: BenchConfig, rows: list[PhaseRow], derived: dict[str, float],
                      study: Any, run_dir: Path, out: Any, worst: int) -> None:
    name = cfg.scenario.name
    tracker.params(comparison, {"scenario": name, "workload": cfg.workload.name,
                                "baseline": cfg.scenario.baseline or rows[0].label,
                                "phases": ",".join(r.label for r in rows)})
    tracker.metrics(comparison, {f"{r.label}.{k}": getattr(r, k) for r in rows
                                 for k in ("images_per_sec", "throughput_x", "train_time_s", "time_x",
                                           "guest_cpu_pct", "host_cpu_pct", "gpu_util_pct")})
    tracker.metrics(comparison, derived)
    if study is not None:
        tracker.params(comparison, study.params())
    for f in ("comparison.csv", "comparison.png"):
        tracker.artifact(comparison, run_dir / f)
    if study is not None:
        from suites.runner import study_report

        study_report.publish(tracker, comparison, run_dir, out)
    tracker.end(comparison, "FINISHED" if worst == 0 else "FAILED")


def run_comparison(cfg: BenchConfig, base_overrides: list[str], run_dir: Path, open_tracker: Any,
                   run_one: Any, out: Any, study: Any = None, fallback: Any = None) -> int:
    """Every phase in order (all composed, placed and given data first), then the normalised report.

    ``study`` (suites/runner/study.py) supplies generated phases, may stop the
    sequence early (consolidation) and adds derived metrics to the comparison run.
    """
    from hydra.utils import get_original_cwd

    from suites.errors import BenchError, PlacementError
    from suites.runner.execute import plan

    phases = []
    for p in all_phases(cfg):
        pcfg, pdcfg = compose_phase(base_overrides, p)
        try:
            phases.append((p, pcfg, pdcfg, plan(pcfg, Path(get_original_cwd()))))
        except PlacementError as exc:
            if study is None or not study.placement_failed(p, exc):
                raise type(exc)(f"phase {p.label}: {exc}") from exc
            out.print(f"note: {study.capacity_note}", markup=False)
            break
        except BenchError as exc:
            raise type(exc)(f"phase {p.label}: {exc}") from exc
    tracker = open_tracker(cfg)
    name = cfg.scenario.name
    comparison = start_comparison_run(tracker, cfg, run_dir) if tracker else None
    rows, worst = [], 0
    for phase, pcfg, pdcfg, planned in phases:
        out.print(f"phase {phase.label}: {' '.join(phase.overrides) or '(as given)'}", markup=False)
        outcome, _ = run_one(pcfg, pdcfg, run_dir / phase.label.replace("/", "-"), tracker, planned,
                             under=comparison, tags={"bench.phase": phase.label, "bench.scenario": name})
        rows.append(phase_row(phase.label, outcome))
        worst = max(worst, outcome.exit_code)
        if outcome.status == "interrupted":
            break
        if study is not None and not study.keep_going(phase.label, outcome):
            out.print(f"phase {phase.label} missed QoS ({study.verdicts[phase.label][1]}): sweep ends here",
                      markup=False)
            break
    rows = normalise(rows, cfg.scenario.baseline)
    what = f"{cfg.scenario.study.cad.workload} + {cfg.scenario.study.ml.workload}" if study else cfg.workload.name
    title = f"{name}: {what}, normalised to {cfg.scenario.baseline or rows[0].label}"
    out.print(table(rows, title))
    run_dir.mkdir(parents=True, exist_ok=True)
    write_csv(rows, run_dir / "comparison.csv")
    plot(rows, run_dir / "comparison.png", title)
    out.print(f"comparison: {run_dir / 'comparison.csv'}, {run_dir / 'comparison.png'}", markup=False)
    derived = study.results() if study is not None else {}
    if tracker and comparison:
        record_or_fall_back(tracker, comparison, fallback, cfg, run_dir, out,
                            lambda t, run_id: record_comparison(t, run_id, cfg, rows, derived, study, run_dir, out,
                                                                worst))
    return worst


def record_or_fall_back(tracker: Any, comparison: str, fallback: Any, cfg: BenchConfig, run_dir: Path, out: Any,
                        record: Any) -> None:
    """``record(tracker, comparison)``; if that store died, ``record`` a run in the fallback store that completes it.

    ``bench.completes`` names the half-written run, so ``suites.runner.sync``
    fills that run in (and nests the phases under it) instead of copying a twin.
    """
    from suites.config import one_line

    try:
        record(tracker, comparison)
        return
    except Exception as exc:  # the phases are recorded (or in the fallback store); never crash at the end
        local = fallback(cfg, tracker.uri, exc) if fallback is not None and not tracker.fallback_for else None
        if local is None:
            out.print(f"warning: comparison run not completed in MLflow ({one_line(exc)}); "
                      f"table and plot are in {run_dir}", markup=False)
            return
    record(local, start_comparison_run(local, cfg, run_dir, {"bench.completes": comparison,
                                                             "bench.fallback_for": tracker.uri}))


def start_comparison_run(tracker: Any, cfg: BenchConfig, run_dir: Path, extra: dict[str, str] | None = None) -> str:
    name = cfg.scenario.name
    return tracker.start(f"{name}-{run_dir.name}", {"bench.role": "comparison", "bench.scenario": name,
                                                   "bench.kind": cfg.scenario.kind, **(extra or {})})
