"""Outcomes and studies built as the runner and the study write them, for the figure and write-up tests
(``drawn``: the figures a test made, each checked to fit)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from PIL import Image

from gpu_probe import vocab
from gpu_probe.inventory import Inventory
from gpu_probe.sampler import SampleSet
from suites.backends.placement import Placement
from suites.guest.protocol import GuestResult, GuestSpec
from suites.record.reader import MixedReport
from suites.render import plots
from suites.run.comparison import PhaseRow
from suites.run.outcome import GuestOutcome, ScenarioOutcome
from suites.validity import NOT_ENFORCED

LONG = ("QoS missed at n2: CAD p95 frame time 106.2 ms > 100 ms limit on guest g1 (viewset catia-02 at 1920x1080) "
        "and the ML guest 31.4 % slower than alone > 25 % limit, so the sweep stopped before n3")


UNITS = ("%", "(s)", "(ms)", "MiB", "images/s", "x baseline", "(x)")


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list:
    """The figures written, kept open (``plots.close`` is where every figure ends)."""
    figures: list = []
    monkeypatch.setattr(plots, "close", figures.append)
    yield figures
    for fig in figures:
        plots.pyplot().close(fig)


def check(fig, path: Path) -> None:
    assert plots.text_outside(fig) == [], f"{path.name}: text cut off at the figure's edge"
    assert plots.overlapping_ticks(fig) == [], f"{path.name}: tick labels on top of each other"
    assert Image.open(path).text["Description"].startswith("validity: ")
    for ax in fig.axes:
        if not ax.get_visible() or not ax.has_data():
            continue
        # a panel's x unit may be on the panel below that shares its time axis
        labels = " ".join([ax.get_ylabel(), ax.get_xlabel(), *(other.get_xlabel() for other in fig.axes
                                              if ax.get_shared_x_axes().joined(ax, other))])
        assert any(u in labels for u in UNITS), f"{path.name}: an axis without a unit ({labels!r})"


def outcome(guests: int = 6) -> ScenarioOutcome:
    inv = Inventory("h", "Linux", "3.11", "cpu", 2, 2, 2, 8192.0)
    specs = [GuestSpec(f"g{i}", "m60-8q-with-a-long-profile-name", "cifar10-torch", {}, {"source": "synthetic"},
                       [i % 2], [], 8192, 4096) for i in range(guests)]
    rows = [{"t_s": t * 0.5, vocab.HOST_CPU.key: 50.0, **{vocab.guest_key(s.guest_id, vocab.GUEST_CPU): 90.0 + i
                                                         for i, s in enumerate(specs)},
             **{vocab.guest_key(s.guest_id, vocab.GUEST_RSS): 500.0 for s in specs},
             vocab.gpu_key(0, vocab.GPU_UTIL): 80.0,
             f"g1.{vocab.gpu_key(0, vocab.GPU_UTIL)}": 40.0 + t} for t in range(20)]  # g1's node's GPU (backend=ray)
    out = [GuestOutcome(s, Placement(s.guest_id, s.vcpus, [], [], validity=NOT_ENFORCED),
                        GuestResult(s.guest_id, "ok", t_train_start=1.0, t_train_end=8.0), Path("g.log"),
                        validity=NOT_ENFORCED) for s in specs]
    return ScenarioOutcome("partial", out, 9.0, [LONG], inv, {}, SampleSet(rows=rows, t0=0.0, rate_hz=2.0))


def phases() -> list[PhaseRow]:
    return [PhaseRow(f"phase-{i}-{'with-a-long-label' * (i % 2)}", "passthrough-4gpu", 4, "ok", 1000.0 * i,
                     10.0 / i, 90, 50, math.nan, validity=NOT_ENFORCED, n=3, throughput_x=float(i),
                     throughput_x_ci_low=i - 0.1, throughput_x_ci_high=i + 0.1, time_x=1.0 / i) for i in range(1, 6)]


def study() -> MixedReport:
    profiles = ["m60-8q", "m60-4q", "m60-2q", "m60-1q"]
    mixed = {p: {"cad_run_time_increase_pct": 5.0 * i, "ml_train_time_increase_pct": 12.0, "sequential_s": 20.0,
                 "concurrent_s": 14.0, "cad.host_cpu_pct": 40.0, "mixed.host_cpu_pct": 80.0, "ml.host_cpu_pct": 45.0}
             for i, p in enumerate(profiles)}
    consolidation = {"qos_p95_frame_ms": 100.0, "qos_ml_slowdown_pct": 25.0, "guests_at_qos": 1.0}
    for n, (p95, slow) in enumerate([(60.0, 10.0), (106.2, 31.4)], start=1):  # both rise: on twin axes they coincide
        consolidation |= {f"n{n}.meets_qos": float(n == 1), f"n{n}.p95_frame_ms_worst": p95,
                          f"n{n}.ml_slowdown_pct": slow}
    return MixedReport(mixed=mixed, consolidation=consolidation, consolidation_profile="m60-2q",
                       validity={"cad": NOT_ENFORCED, "mixed": NOT_ENFORCED, "ml": NOT_ENFORCED}, stop_reason=LONG)
