"""A guest's GPU utilisation over its timed windows, from the driver's own samples (gpu_probe/windows.py).

Figures from an H200's gpu-check b2 (2026-11-26): NVML's utilisation reading lags one driver period, so at 10 Hz the
rows read 0 % for the first 0.2 s of each 2 s window and the rows' mean was 89.6 % (the check failed at 90 %) where
the GPU ran kernels ~99 % of the windows' time.
"""

import math

import pytest

from gpu_probe import vocab
from gpu_probe.nvml import Nvml
from gpu_probe.sampler import Sampler, SampleSet
from gpu_probe.trace import FORMAT, ReplayNvml
from gpu_probe.windows import periods_inside, timed_gpu
from suites.gpucheck import judges as judge

from .helpers import wait_for

T0 = 1_795_697_537.0
PERIOD = 1 / 6  # the driver's sample period (1/6 s to 1 s by product)
WINDOWS = [(T0 + 1.0, T0 + 3.0), (T0 + 4.0, T0 + 6.0)]


def busy(t: float) -> bool:
    return any(a <= t <= b for a, b in WINDOWS)


def lagging_rows() -> list[dict[str, float]]:
    """10 Hz rows whose utilisation is the driver's last finished period, 0.2 s late: idle at each window's start."""
    return [{"t_s": k / 10, "gpu0.util_pct": 99.0 if busy(T0 + k / 10 - 0.2) else 0.0,
             "gpu0.power_W": 500.0 if busy(T0 + k / 10) else 80.0} for k in range(70)]


def driver_samples(start: float = T0, end: float = T0 + 7.0) -> list[tuple[float, float]]:
    """The driver's periods: 99 % where the period lies in a window, 0 % outside, a share where it straddles."""
    out, t = [], start
    while t + PERIOD <= end:
        a, b = t, t + PERIOD
        ran = sum(max(0.0, min(b, hi) - max(a, lo)) for lo, hi in WINDOWS) / PERIOD
        out.append((b, round(99.0 * ran, 3)))
        t = b
    return out


def test_rows_alone_read_the_idle_time_before_each_window():
    timed = timed_gpu(SampleSet(rows=lagging_rows(), t0=T0), WINDOWS)
    assert timed["timed.gpu0.util_pct.mean"] < 90  # what failed b2 on a healthy H200
    assert f"timed.gpu0.util_pct{vocab.PERIODS}" not in timed and timed["timed.gpu0.power_W.mean"] == 500.0


def test_the_driver_periods_inside_the_windows_give_the_time_kernels_ran():
    samples = SampleSet(rows=lagging_rows(), t0=T0, util_samples={0: driver_samples()})
    timed = timed_gpu(samples, WINDOWS)
    assert timed["timed.gpu0.util_pct.mean"] == pytest.approx(99.0)
    assert timed["timed.gpu0.util_pct.max"] == 99.0 and timed["timed.gpu0.util_pct.p95"] == 99.0
    # 2 s windows hold 11 whole periods of 1/6 s each (a straddling one is left out): 22
    assert timed[f"timed.gpu0.util_pct{vocab.PERIODS}"] == 22
    assert timed["timed.samples"] == 42 and timed["timed.gpu0.power_W.mean"] == 500.0  # the rows still count


def test_a_period_straddling_a_window_edge_is_left_out_and_the_mean_is_time_weighted():
    samples = [(10.0, 0.0), (10.5, 0.0), (11.0, 50.0), (13.0, 100.0), (13.5, 100.0)]
    assert periods_inside(samples, [(10.4, 13.2)]) == [(0.5, 50.0), (2.0, 100.0)]
    timed = timed_gpu(SampleSet(rows=[{"t_s": 1.0, "gpu0.util_pct": 7.0}], t0=10.0,
                                util_samples={0: samples}), [(10.4, 13.2)])
    assert timed["timed.gpu0.util_pct.mean"] == pytest.approx((0.5 * 50 + 2.0 * 100) / 2.5)


def test_windows_shorter_than_a_period_keep_the_rows_reading():
    samples = SampleSet(rows=lagging_rows(), t0=T0, util_samples={0: [(T0, 0.0), (T0 + 7.0, 60.0)]})
    timed = timed_gpu(samples, WINDOWS)
    assert f"timed.gpu0.util_pct{vocab.PERIODS}" not in timed and timed["timed.gpu0.util_pct.mean"] < 90


def test_the_b2_judge_passes_a_busy_gpu_and_says_what_its_util_averages():
    samples = SampleSet(rows=lagging_rows(), t0=T0, util_samples={0: driver_samples()})
    res = {"status": "ok", "host_metrics": {"gpu0.util_pct.mean": 40.0, "energy_J": 7478.0}, "sampler": {},
           "guests": [{"result": {"guest_id": "g0", "status": "ok", "error": None, "info": {},
                                  "metrics": {}, "repeats": [{"images_per_sec": 235_000.0 + k} for k in range(5)]},
                       "sampled": timed_gpu(samples, WINDOWS)}]}
    verdict = judge.cifar(res)
    assert verdict.result == "ok", verdict.result
    assert "GPU util 99 % in its timed windows (22 driver periods wholly inside them, 42 samples; whole run 40 %)" \
        in verdict.figure
    res["guests"][0]["sampled"] = timed_gpu(SampleSet(rows=lagging_rows(), t0=T0), WINDOWS)
    assert judge.cifar(res).result == "failed: util 89.6 % < 90 %"  # the H200's b2, to a tenth: never "90 % < 90 %"


def trace(samples: list[dict]) -> dict:
    return {"format": FORMAT, "version": 1, "static": {
        "nvmlDeviceGetCount()": 1, "nvmlDeviceGetHandleByIndex(0)": "gpu0",
        "nvmlDeviceGetUtilizationRates(gpu0)": {"gpu": 0, "memory": 0},
        "nvmlDeviceGetSamples(gpu0,1)": [1, samples]}, "frames": []}


def test_nvml_hands_each_driver_sample_once_in_epoch_seconds():
    got = [{"timeStamp": 1_795_697_537_166_667, "sampleValue": {"uiVal": 97}},
           {"timeStamp": 1_795_697_537_000_000, "sampleValue": {"uiVal": 3}}]
    with Nvml(ReplayNvml(trace(got))) as nv:
        first, again = nv.util_samples(0), nv.util_samples(0)  # a replay answers the same; the wrapper dedupes
    assert first == [(1_795_697_537.0, 3.0), (1_795_697_537.166667, 97.0)] and again == []
    with Nvml(ReplayNvml({**trace([]), "static": {"nvmlDeviceGetCount()": 1,
                                                  "nvmlDeviceGetHandleByIndex(0)": "gpu0"}})) as nv:
        assert nv.util_samples(0) == []  # a driver without them: NOT_SUPPORTED, nothing invented


def test_the_sampler_keeps_the_driver_samples_for_the_timed_windows():
    got = [{"timeStamp": 1_795_697_537_000_000 + k * 166_667, "sampleValue": {"uiVal": 90 + k}} for k in range(4)]
    with Sampler(50, nvml=Nvml(ReplayNvml(trace(got)))) as s:
        wait_for(lambda: len(s.rows) >= 3, timeout=30)
    snap = s.snapshot()
    assert [pct for _, pct in snap.util_samples[0]] == [90.0, 91.0, 92.0, 93.0]  # once each, over many ticks
    assert not math.isnan(snap.rows[0]["gpu0.util_pct"])
