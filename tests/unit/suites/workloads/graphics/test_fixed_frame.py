"""The stand-in CAD guest (suites/workloads/graphics/fixed_frame.py): each viewset's frames take its frame time, the
traces' tests and frame counts as graphics-replay replays them, passes to fill min_replay_s; no OpenGL."""

from __future__ import annotations

import pytest

from suites.errors import ConfigError
from suites.workloads import workload_class
from suites.workloads.base import GuestContext
from suites.workloads.graphics.fixed_frame import FixedFrame, FixedFrameConfig
from suites.workloads.timing import StepMeter


def replayed(**config: object) -> tuple[FixedFrame, dict[str, float]]:
    cfg = FixedFrameConfig(**config)  # type: ignore[arg-type]
    cfg.check()
    data = FixedFrame.resolve_data(cfg, None, 0)
    wl = FixedFrame(cfg, GuestContext("g0", [0], [], None, data, seed=0))
    wl.prepare()
    meter = StepMeter(0, wl.total_steps())
    meter.start()
    wl.train(meter)
    meter.finish()
    return wl, wl.evaluate()


def test_each_viewsets_frames_take_its_frame_time_over_the_traces_tests():
    wl, m = replayed(viewsets=["mechanical", "product"], frames_per_test=6, frame_ms={"mechanical": 8.0},
                     default_frame_ms=2.0)
    assert m["mechanical.frames"] == 3 * (6 - 2) and m["product.frames"] == 2 * (6 - 2)  # tests x timed frames
    # a sleep each: never shorter than its frame time (a busy host may wake it late: no upper bound but a sane one)
    assert 8.0 <= m["mechanical.frame_time_ms.p50"] < 200 and 2.0 <= m["product.frame_time_ms.p50"] < 200
    assert wl.ctx.info["renderer"].startswith("stand-in") and wl.ctx.info["replay_passes"] == 1
    assert "pixels_ok" not in m  # nothing drawn, nothing checked


def test_it_replays_passes_until_min_replay_s_as_graphics_replay_does():
    """Passes until the timed frames fill min_replay_s, and not one more: judged on the frames' own seconds, so it holds
    on a loaded host, where a 5 ms sleep wakes late and fewer passes fill it (">= 3 passes" failed beside a CI run)."""
    wl, m = replayed(viewsets=["product"], frames_per_test=4, default_frame_ms=5.0, min_replay_s=0.1)
    passes, timed = wl.ctx.info["replay_passes"], 4 - 2  # each test's frames past its 2 warm-up frames, per pass

    def filled(k: int) -> float:  # the timed frames' seconds after k passes
        return sum(sum(run.frame_s[:k * timed]) for runs in wl.runs.values() for run in runs)

    assert all(len(run.frame_s) == passes * timed for runs in wl.runs.values() for run in runs)
    assert filled(passes) >= 0.1 > filled(passes - 1) and m["run_time_s"] >= 0.1


def test_a_frame_time_out_of_range_is_one_config_error():
    with pytest.raises(ConfigError, match=r"workload.frame_ms.mechanical: must be milliseconds in \(0, 60000\]"):
        FixedFrameConfig(frame_ms={"mechanical": -1.0}).check()
    assert workload_class("fixed-frame").missing() == []  # no OpenGL needed
