"""``graphics-replay``: the suite's CAD viewsets replayed headless through OpenGL/EGL.

Each viewset's frame trace is played back deterministically; a frame's time
is the wall time from its first draw call to ``glFinish`` (GL timer queries
are added only where the driver's are sane: not on llvmpipe). Scores follow
SPECviewperf: fps per test, and per viewset a weighted geometric mean of the
tests' fps. Chosen frames are checksummed outside the timed region.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional

from gpu_probe import vocab
from gpu_probe.nvml import Nvml
from gpu_probe.shapes import JsonObject
from gpu_probe.stats import percentile
from gpu_probe.trace import lib_from_env
from suites.data.options import DataConfig
from suites.errors import BenchError, ConfigError, require
from suites.workloads.base import CAD, Workload, WorkloadConfig
from suites.workloads.graphics import egldevice, frametrace, renderer, scene
from suites.workloads.graphics import frame_checks as checks
from suites.workloads.timing import StepMeter

GPU_TIMER = ("auto", "on", "off")
MAX_TARGET_SAMPLES = 8192 * 8192 * 8  # width x height x MSAA samples: 8192² at MSAA 8, 16384² at 2


@dataclass
class GraphicsReplayConfig(WorkloadConfig):
    name: str = "graphics-replay"
    framework: str = "opengl"
    warmup_steps: int = 0  # frames carry no images; warm-up is per test, below
    viewsets: list[str] = field(default_factory=lambda: ["mechanical", "architecture", "product"])
    size: str = "small"  # small | medium | large: triangles per scene, resolution, texture size
    resolution: Optional[list[int]] = None  # [width, height]; default from the size
    samples: int = 1  # MSAA samples of the render target
    texture_size: Optional[int] = None  # default from the size
    frames_per_test: Optional[int] = None  # replay only the first N frames of each test
    # Replay the viewsets again (whole passes, each test's warm-up frames again) until the timed frames have lasted
    # this long; null: one pass. A mixed or consolidation run sets it to its ML guest's window, so the CAD work
    # covers that window on a GPU too (a pass lasts 0.05-0.35 s at an H200's frame rates, seconds on a CPU).
    min_replay_s: Optional[float] = None
    warmup_frames: int = 2  # per test, replayed but not timed into fps/percentiles
    # default: the traces shipped with the suite
    trace_dir: Optional[str] = field(default=None, metadata={"path": True})
    # default: the references shipped with the suite
    golden_dir: Optional[str] = field(default=None, metadata={"path": True})
    verify: bool = True  # checksum the trace's chosen frames
    strict: bool = False  # a pixel mismatch fails the guest (else it is reported)
    tolerance_pct: float = 1.0  # cross-renderer diff: share of pixels allowed to differ
    gpu_timer: str = "auto"  # auto: GL timer queries unless the renderer is software
    libegl: Optional[str] = None  # EGL library to load (default: the system's libEGL.so)
    egl_device: int = -1  # EGL device index; -1: the guest's first GPU, or 0 without one
    frame_markers: bool = False  # eglSwapBuffers per frame, so apitrace can record frames

    def check(self) -> None:
        super().check()
        require(self.size in scene.SIZES, "workload.size", f"must be one of {', '.join(scene.SIZES)}")
        require(len(self.viewsets) >= 1, "workload.viewsets", "name at least one viewset")
        require(self.resolution is None or (len(self.resolution) == 2 and min(self.resolution) >= 16
                                            and max(self.resolution) <= 16384),
                "workload.resolution", "must be [width, height], each 16..16384")
        require(self.samples in (1, 2, 4, 8), "workload.samples", f"must be 1, 2, 4 or 8, got {self.samples}")
        (w, h), samples = self.geometry()[1], self.samples
        require(w * h * samples <= MAX_TARGET_SAMPLES, "workload.samples",
                f"{w}x{h} x MSAA {samples} = {w * h * samples} samples is more than {MAX_TARGET_SAMPLES}, the largest "
                "render target this suite supports (drivers refuse larger multisampled buffers)")
        require(self.texture_size is None or 16 <= self.texture_size <= 16384, "workload.texture_size",
                "must be 16..16384")
        require(self.frames_per_test is None or self.frames_per_test >= 1, "workload.frames_per_test", "must be >= 1")
        require(self.min_replay_s is None or 0 < self.min_replay_s <= 3600, "workload.min_replay_s",
                f"must be seconds in (0, 3600], or null for one pass; got {self.min_replay_s}")
        require(self.warmup_frames >= 0, "workload.warmup_frames", f"must be >= 0, got {self.warmup_frames}")
        require(0 <= self.tolerance_pct <= 100, "workload.tolerance_pct", "must be 0..100")
        require(self.gpu_timer in GPU_TIMER, "workload.gpu_timer", f"must be one of {', '.join(GPU_TIMER)}")

    def geometry(self) -> tuple[int, tuple[int, int], int]:
        tris, res, tex = scene.SIZES[self.size]
        return tris, tuple(self.resolution) if self.resolution else res, self.texture_size or tex  # type: ignore[return-value]


MAX_PASSES = 100_000  # a bound, whatever a frame takes


@dataclass
class TestRun:
    """What one test of a viewset measured."""

    name: str
    weight: float
    frame_s: list[float] = field(default_factory=list)  # timed frames only
    gpu_ms: list[float] = field(default_factory=list)
    triangles: int = 0
    all_s: float = 0.0  # warm-up frames included


class GraphicsReplay(Workload):
    name = "graphics-replay"
    config_cls = GraphicsReplayConfig
    category = CAD
    smoke = {"frames_per_test": 8}  # frames 0 and 7 still get their pixel check
    requires = {"moderngl": "graphics"}

    @classmethod
    def resolve_data(cls, cfg: GraphicsReplayConfig, data: DataConfig | None, seed: int) -> JsonObject:  # type: ignore[override]
        """Runner-side: find and validate every trace before a guest starts."""
        trace_dir = cfg.trace_dir or str(frametrace.TRACE_DIR)
        known = frametrace.known_viewsets(trace_dir)
        traces = {}
        for vs in cfg.viewsets:
            if vs not in known:
                raise ConfigError(f"workload.viewsets: unknown viewset {vs!r} (known in {trace_dir}: "
                                  f"{', '.join(known) or 'none'})")
            traces[vs] = str(frametrace.trace_path(vs, trace_dir))
            frametrace.load(traces[vs])  # malformed or truncated: one line, nothing started
        return {"source": "frame traces", "root": trace_dir, "traces": traces,
                "golden_dir": cfg.golden_dir}

    def egl_device(self) -> int:
        """``workload.egl_device`` when set; else the EGL device that is the guest's GPU, matched by UUID or PCI
        bus id (EGL ignores CUDA_VISIBLE_DEVICES: index 0 was the host's first GPU, whatever the placement); a GPU
        given by index (inside a VM) is first named by NVML's device of that index; without a GPU, device 0 (Mesa)."""
        cfg, ctx = self.cfg, self.ctx
        if cfg.egl_device >= 0:
            ctx.info["egl_device"] = f"EGL device {cfg.egl_device}: workload.egl_device"
            return cfg.egl_device
        if not ctx.gpus:
            return 0
        uuid = ctx.gpus[0]
        with Nvml(lib_from_env()[0]) as nv:  # a recorded trace stands in where one is given (no GPU: the tests)
            if uuid.isdigit():  # an index (a VM's own GPUs, numbered from 0): CUDA's PCI order, which is NVML's
                uuid = str(nv.device_info(int(uuid)).get("uuid") or uuid)
            pci = nv.pci_bus_id(uuid) if not uuid.isdigit() else None
        if uuid.isdigit():  # NVML gave no UUID: by index, which EGL's order may not follow
            ctx.info["egl_device"] = f"EGL device {uuid}: by index (no GPU UUID)"
            return int(uuid)
        try:
            devices = egldevice.list_devices(cfg.libegl)
            if not any(d.uuid or d.pci for d in devices):  # no device says which GPU it is: Mesa only, most likely
                ctx.info["egl_device"] = ("EGL device 0: no EGL device names its GPU: "
                                          f"{egldevice.nvidia_egl_problem() or 'NVIDIA EGL lists no UUID or PCI'}")
                return 0  # a software renderer there: the guest is labelled not enforced (renderer_note)
            index, ctx.info["egl_device"] = egldevice.choose(devices, uuid, pci)
        except egldevice.EglDeviceError as exc:  # another GPU's device would render, labelled as this one's
            raise renderer.GraphicsUnavailable(str(exc)) from None
        return index

    def prepare(self) -> None:
        cfg, ctx = self.cfg, self.ctx
        device = self.egl_device()
        self.gl = renderer.create_context(cfg.libegl, device)
        self.renderer_name = renderer.renderer_string(self.gl)
        software = renderer.is_software(self.gl)
        self.use_timer = cfg.gpu_timer == "on" or (cfg.gpu_timer == "auto" and not software)
        ctx.info.update(renderer=self.renderer_name, gpu_timer=self.use_timer, size=cfg.size, viewsets=cfg.viewsets)
        if ctx.gpus and software:
            ctx.info["renderer_note"] = ("guest has a GPU but EGL gave a software renderer: "
                                         f"{egldevice.nvidia_egl_problem() or 'NVIDIA EGL did not take it'}")
        self.traces = {vs: frametrace.load(path) for vs, path in ctx.data["traces"].items()}
        tris, res, tex = cfg.geometry()
        self.scenes: dict[str, tuple[list[scene.Solid], list[scene.Mesh]]] = {}
        for vs, trace in self.traces.items():
            parts = scene.parts(trace.generator, trace.seed)
            meshes = scene.meshes(parts, tris)
            need = renderer.memory_need(meshes, any(p.textured for p in parts), res, cfg.samples, tex)
            ctx.info[f"{vs}.memory_MiB"] = round(need.total_MiB, 1)
            cap = ctx.framebuffer_MiB
            if cap is not None and need.total_MiB > cap:
                raise BenchError(f"viewset {vs} at size {cfg.size} needs {need.describe()}, which exceeds "
                                 f"profile framebuffer {cap} MiB")
            self.scenes[vs] = (parts, meshes)
        self.goldens = checks.Goldens(ctx.data.get("golden_dir"), cfg.tolerance_pct)

    def frames_of(self, test: frametrace.Test) -> tuple[frametrace.Frame, ...]:
        return test.frames[: self.cfg.frames_per_test] if self.cfg.frames_per_test else test.frames

    def total_steps(self) -> int:
        return sum(len(self.frames_of(t)) for tr in self.traces.values() for t in tr.tests)

    def train(self, meter: StepMeter) -> None:
        """One pass over the viewsets, or as many as fill ``workload.min_replay_s`` of timed frames; each test's
        figures gather its frames over every pass, the pixel checks are made on the first."""
        cfg = self.cfg
        self.marker = renderer.FrameMarker() if cfg.frame_markers else (lambda: None)
        self.runs: dict[str, list[TestRun]] = {vs: [TestRun(t.name, t.weight) for t in trace.tests]
                                               for vs, trace in self.traces.items()}
        self.verdicts: dict[str, list[Any]] = {vs: [] for vs in self.traces}
        passes = 0
        while passes < MAX_PASSES:
            self.replay_pass(meter, first=passes == 0)
            passes += 1
            timed_s = sum(sum(run.frame_s) for runs in self.runs.values() for run in runs)
            if not cfg.min_replay_s or timed_s >= cfg.min_replay_s:
                break
        self.ctx.info["replay_passes"] = passes
        if cfg.min_replay_s:
            self.ctx.info["replay_sized"] = f"{passes} pass(es) to fill workload.min_replay_s={cfg.min_replay_s:g} s"

    def replay_pass(self, meter: StepMeter, first: bool) -> None:
        _, res, tex = self.cfg.geometry()
        for vs, trace in self.traces.items():
            parts, meshes = self.scenes[vs]
            r = renderer.SceneRenderer(self.gl, parts, meshes, res, self.cfg.samples, tex, trace.seed)
            try:
                for run, test in zip(self.runs[vs], trace.tests, strict=True):
                    self.replay_test(vs, r, test, run, meter, verify=first)
            finally:
                r.release()

    def replay_test(self, vs: str, r: Any, test: frametrace.Test, run: TestRun, meter: StepMeter,
                    verify: bool) -> None:
        res = self.cfg.geometry()[1]
        query = self.gl.query(time=True) if self.use_timer else None
        for k, frame in enumerate(self.frames_of(test)):
            t0 = time.perf_counter()
            if query is not None:
                with query:
                    tris = r.draw(frame, test.mode)
            else:
                tris = r.draw(frame, test.mode)
            self.gl.finish()
            dt = time.perf_counter() - t0
            self.marker()
            run.all_s += dt
            if k >= self.cfg.warmup_frames:
                run.frame_s.append(dt)
                run.triangles += tris
                if query is not None and 0 < query.elapsed < dt * 2e9:  # ns; anything else is a broken timer
                    run.gpu_ms.append(query.elapsed / 1e6)
            if verify and self.cfg.verify and k in test.checksum_frames:  # after the clock stopped
                key = checks.frame_key(vs, self.cfg.size, res, self.cfg.samples, test.name, k)
                self.verdicts[vs].append(self.goldens.verify(self.renderer_name, key, r.pixels(), res))
            meter.step(0)

    def device_memory(self) -> dict[str, float]:
        """What its viewsets state they need (set up, before a frame): measured or not, a framebuffer below it
        cannot hold this guest (the sizing's density table leaves such profiles out without a GPU too)."""
        stated = [float(v) for k, v in self.ctx.info.items() if k.endswith(".memory_MiB")]
        return {vocab.GUEST_GPU_MEM_STATED.key: max(stated)} if stated else {}

    def evaluate(self) -> dict[str, float]:
        out: dict[str, float] = {}
        composites, frame_s, run_s, tris = [], [], 0.0, 0
        for vs, runs in self.runs.items():
            for run in runs:
                out.update(frame_stats(run.frame_s, run.gpu_ms, f"{vs}.{run.name}"))
            vs_frames = [t for run in runs for t in run.frame_s]
            out.update(frame_stats(vs_frames, [g for run in runs for g in run.gpu_ms], vs))
            score = composite([(run.weight, len(run.frame_s) / sum(run.frame_s)) for run in runs if run.frame_s])
            out[vocab.scoped_key(vs, vocab.COMPOSITE)] = score
            composites.append(score)
            frame_s += vs_frames
            run_s += sum(run.all_s for run in runs)
            tris += sum(run.triangles for run in runs)
            if self.cfg.verify:
                summary = checks.summarize_verdicts(self.verdicts[vs])
                self.ctx.info[f"{vs}.pixels"] = summary
                # a wrong picture is not an ok result, strict or not: results, table and MLflow say mismatch
                self.ctx.info[f"{vs}.status"] = "mismatch" if summary["failed"] else "ok"
                out[vocab.scoped_key(vs, vocab.PIXELS_OK)] = float(not summary["failed"])
        out.update(frame_stats(frame_s, [], ""))
        out[vocab.RUN_TIME.key] = run_s
        out[vocab.COMPOSITE.key] = composite([(1.0, c) for c in composites])
        out[vocab.TRIANGLES_PER_SEC.key] = tris / sum(frame_s) if frame_s else math.nan
        failed = [f for vs in self.verdicts for f in self.ctx.info.get(f"{vs}.pixels", {}).get("failed", [])]
        if failed:
            out[vocab.PIXELS_OK.key] = 0.0
            if self.cfg.strict:
                raise BenchError(f"pixel check failed on {self.renderer_name}: {failed[0]}"
                                 + (f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""))
        elif self.cfg.verify:
            out[vocab.PIXELS_OK.key] = 1.0
        return out


def frame_stats(frame_s: list[float], gpu_ms: list[float], scope: str) -> dict[str, float]:
    """fps and frame-time percentiles of one test, viewset or the whole run."""
    if not frame_s:
        return {}
    ms = sorted(t * 1e3 for t in frame_s)
    out = {vocab.scoped_key(scope, vocab.FPS): len(ms) / (sum(ms) / 1e3),
           vocab.scoped_key(scope, vocab.FRAMES): float(len(ms))}
    for q in (50, 95, 99):
        out[vocab.scoped_key(scope, vocab.FRAME_TIME, f"p{q}")] = percentile(ms, q)
    median = percentile(ms, 50)  # stutter: the hitches a p95 averages away (a frame twice as long as usual)
    out[vocab.scoped_key(scope, vocab.STUTTER)] = 100.0 * sum(1 for t in ms if t > 2 * median) / len(ms)
    if gpu_ms:
        out[vocab.scoped_key(scope, vocab.GPU_FRAME_TIME, "p50")] = percentile(sorted(gpu_ms), 50)
    return out


def composite(weighted_fps: list[tuple[float, float]]) -> float:
    """Weighted geometric mean: one slow test cannot be hidden by a fast one."""
    total = sum(w for w, _ in weighted_fps)
    if not weighted_fps or total <= 0 or any(f <= 0 for _, f in weighted_fps):
        return math.nan
    return math.exp(sum(w * math.log(f) for w, f in weighted_fps) / total)
