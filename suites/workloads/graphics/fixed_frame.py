"""A stand-in CAD guest whose frames take set times: ``workload=fixed-frame +workload.frame_ms.mechanical=1.96``.

It replays the viewsets' frame traces as ``graphics-replay`` does (their tests, weights, frame counts, warm-up
frames, passes to fill ``min_replay_s``), each frame a sleep of its viewset's ``frame_ms`` instead of a draw: a GPU's
CAD guest (a viewset's pass in a tenth of a second) on any host, without OpenGL. ``make rehearse`` plays a device
file's measured frame times with it, as ``fixed-step`` plays its step times. Its figures are a stand-in's: no
renderer, no pixels (``verify`` is off)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from suites.errors import require
from suites.workloads.graphics import frametrace
from suites.workloads.graphics.replay import GraphicsReplay, GraphicsReplayConfig
from suites.workloads.timing import StepMeter


@dataclass
class FixedFrameConfig(GraphicsReplayConfig):
    name: str = "fixed-frame"
    framework: str = "none"
    frame_ms: dict[str, float] = field(default_factory=dict)  # each viewset's: +workload.frame_ms.<viewset>=<ms>
    default_frame_ms: float = 1.0  # a viewset frame_ms does not name
    verify: bool = False  # nothing is drawn: no pixels to check

    def check(self) -> None:
        super().check()
        named = {f"workload.frame_ms.{vs}": ms for vs, ms in self.frame_ms.items()}
        for key, ms in {**named, "workload.default_frame_ms": self.default_frame_ms}.items():
            require(isinstance(ms, (int, float)) and math.isfinite(ms) and 0 < ms <= 60_000, key,
                    f"must be milliseconds in (0, 60000], got {ms!r}")


class FixedFrame(GraphicsReplay):
    name = "fixed-frame"
    config_cls = FixedFrameConfig
    requires: dict[str, str] = {}  # no OpenGL
    smoke = {"frames_per_test": 8}

    def prepare(self) -> None:
        self.traces = {vs: frametrace.load(path) for vs, path in self.ctx.data["traces"].items()}
        self.renderer_name, self.use_timer = "stand-in (fixed-frame: a sleep per frame)", False
        self.ctx.info.update(renderer=self.renderer_name, device="none", gpu_timer=False, size=self.cfg.size,
                             viewsets=self.cfg.viewsets)

    def replay_pass(self, meter: StepMeter, first: bool) -> None:
        cfg = self.cfg
        assert isinstance(cfg, FixedFrameConfig)
        for vs, trace in self.traces.items():
            frame_s = cfg.frame_ms.get(vs, cfg.default_frame_ms) / 1e3
            for run, test in zip(self.runs[vs], trace.tests, strict=True):
                for k, _ in enumerate(self.frames_of(test)):
                    t0 = time.perf_counter()
                    time.sleep(frame_s)
                    dt = time.perf_counter() - t0
                    run.all_s += dt
                    if k >= cfg.warmup_frames:
                        run.frame_s.append(dt)
                    meter.step(0)
