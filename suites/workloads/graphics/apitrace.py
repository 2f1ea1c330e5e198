"""``apitrace-replay``: replay a user's apitrace ``.trace`` headless with Debian's ``eglretrace``.

Real application traces (a CAD session recorded with ``apitrace trace --api
egl``) replayed surfaceless through Waffle (``WAFFLE_PLATFORM=surfaceless_egl``).
Timed pass: ``eglretrace --benchmark`` -> "Rendered N frames in X secs".
Profiling pass (optional, separate so it cannot slow the timed one):
``--pframes="opengl: CPU Duration, GPU Duration"`` -> per-frame CPU and GPU
times; GPU times only where timer queries are sane (not llvmpipe). The file is
checked with ``apitrace info`` runner-side, so a truncated or foreign file is
one line before any guest starts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import MISSING

from gpu_probe import vocab
from gpu_probe.shapes import JsonObject
from gpu_probe.stats import percentile
from suites.data.dataset import require_regular_file
from suites.data.options import DataConfig
from suites.errors import BenchError, ConfigError, DataError, require
from suites.workloads.base import CAD, Workload, WorkloadConfig
from suites.workloads.graphics import renderer
from suites.workloads.graphics.frametrace import TraceFormatError
from suites.workloads.timing import StepMeter

RENDERED = re.compile(r"Rendered (\d+) frames in ([0-9.eE+-]+) secs")
INSTALL = "install Debian's apitrace (make setup-system)"


@dataclass
class ApitraceReplayConfig(WorkloadConfig):
    name: str = "apitrace-replay"
    framework: str = "opengl"
    warmup_steps: int = 0
    # path to a .trace recorded with `apitrace trace --api egl`
    trace: str = field(default=MISSING, metadata={"path": True})
    retrace: str = "eglretrace"
    waffle_platform: str = "surfaceless_egl"  # headless: no X, no window
    loops: int = 1  # timed replays of the whole trace
    profile_frames: bool = True  # a separate --pframes pass for per-frame CPU/GPU times
    timeout_s: float = 600.0  # per eglretrace call: a stuck driver is a failed result, not a hang

    def check(self) -> None:
        super().check()
        require(self.loops >= 1, "workload.loops", f"must be >= 1, got {self.loops}")
        require(self.timeout_s > 0, "workload.timeout_s", "must be > 0")


def info(trace: Path) -> JsonObject:
    """``apitrace info`` as a dict; a file apitrace cannot read is a TraceFormatError."""
    try:
        require_regular_file(trace, "apitrace trace")
    except DataError as exc:
        raise TraceFormatError(str(exc)) from None
    if trace.stat().st_size == 0:
        raise TraceFormatError(f"apitrace trace {trace} is empty")
    tool = shutil.which("apitrace")
    if tool is None:
        raise ConfigError(f"apitrace not found on PATH: {INSTALL}")
    proc = subprocess.run([tool, "info", str(trace)], capture_output=True, text=True, timeout=120)
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith(("error", "warning"))]
    if proc.returncode != 0:
        how = f"crashed with signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        raise TraceFormatError(f"{trace.name} is not a readable apitrace trace (apitrace info {how}: "
                               f"{last_error(proc.stderr)[:120]})")
    doc = json.loads(proc.stdout)
    if any("unexpected end of file" in ln for ln in errors):
        raise TraceFormatError(f"{trace.name} is truncated (apitrace: unexpected end of file after "
                               f"{doc.get('FramesCount', 0)} frames)")
    if not doc.get("FramesCount"):
        raise TraceFormatError(f"{trace.name} holds no complete frame (no eglSwapBuffers: record with frame markers)")
    return doc


def parse_rendered(output: str) -> tuple[int, float]:
    m = RENDERED.search(output)
    if m is None:
        raise BenchError(f"eglretrace printed no 'Rendered N frames' line: {last_error(output)}")
    return int(m.group(1)), float(m.group(2))


def parse_pframes(output: str, frames: int) -> tuple[list[float], list[float]]:
    """(cpu_ms, gpu_ms) per frame from --pframes output; the tail after the last swap is dropped."""
    cpu, gpu = [], []
    for line in output.splitlines():
        cols = line.split("\t")
        if cols[0] == "frame" and len(cols) == 3:
            cpu.append(int(cols[1]) / 1e6)
            gpu.append(int(cols[2]) / 1e6)
    return cpu[:frames], gpu[:frames]


def last_error(output: str) -> str:
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower()]
    return (errors or lines or ["no output"])[-1][:200]


class ApitraceReplay(Workload):
    name = "apitrace-replay"
    config_cls = ApitraceReplayConfig
    category = CAD
    smoke = {"loops": 1, "profile_frames": False}

    @classmethod
    def resolve_data(cls, cfg: ApitraceReplayConfig, data: DataConfig | None, seed: int) -> JsonObject:  # type: ignore[override]
        trace = Path(cfg.trace)
        if shutil.which(cfg.retrace) is None:
            raise ConfigError(f"workload.retrace: {cfg.retrace} not found on PATH: {INSTALL}")
        doc = info(trace)
        return {"source": "apitrace", "root": str(trace), "trace": str(trace), "frames": doc["FramesCount"],
                "api": doc.get("API", "?")}

    def prepare(self) -> None:
        gl = renderer.create_context()  # the renderer eglretrace will get, and proof EGL works at all
        self.renderer_name, self.software = renderer.renderer_string(gl), renderer.is_software(gl)
        gl.release()
        self.scope = Path(self.ctx.data["trace"]).stem
        self.ctx.info.update(renderer=self.renderer_name, viewsets=[self.scope], trace=self.ctx.data["trace"])

    def total_steps(self) -> int:
        return self.cfg.loops + int(self.cfg.profile_frames)

    def retrace(self, *options: str) -> str:
        cmd = [self.cfg.retrace, *options, self.ctx.data["trace"]]
        env = {**os.environ, "WAFFLE_PLATFORM": self.cfg.waffle_platform}
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=self.cfg.timeout_s, env=env)
        except subprocess.TimeoutExpired:
            raise BenchError(f"{self.cfg.retrace} did not finish within {self.cfg.timeout_s:g} s") from None
        print(proc.stderr, file=sys.stderr, end="")  # the guest log keeps the retracer's chatter
        if proc.returncode != 0:
            raise BenchError(f"{self.cfg.retrace} failed (exit {proc.returncode}): {last_error(proc.stderr)}")
        return proc.stdout + proc.stderr

    def train(self, meter: StepMeter) -> None:
        self.timed: list[tuple[int, float]] = []
        for _ in range(self.cfg.loops):
            self.timed.append(parse_rendered(self.retrace("--benchmark")))
            meter.step(0)
        self.cpu_ms: list[float] = []
        self.gpu_ms: list[float] = []
        if self.cfg.profile_frames:
            frames = self.timed[0][0]
            self.cpu_ms, self.gpu_ms = parse_pframes(self.retrace("--pframes=opengl: CPU Duration, GPU Duration"),
                                                     frames)
            meter.step(0)

    def evaluate(self) -> dict[str, float]:
        frames = sum(n for n, _ in self.timed)
        secs = sum(s for _, s in self.timed)
        if frames == 0 or secs <= 0:
            raise BenchError("eglretrace rendered 0 frames (a trace without frame boundaries?)")
        fps = frames / secs
        out = {vocab.FRAMES.key: float(frames), vocab.RUN_TIME.key: secs, vocab.FPS.key: fps,
               vocab.COMPOSITE.key: fps, vocab.scoped_key(self.scope, vocab.FPS): fps,
               vocab.scoped_key(self.scope, vocab.FRAMES): float(frames),
               vocab.scoped_key(self.scope, vocab.COMPOSITE): fps}
        series = [(vocab.CPU_FRAME_TIME, self.cpu_ms)]
        if not self.software:  # llvmpipe's timer queries are not GPU times
            series.append((vocab.GPU_FRAME_TIME, self.gpu_ms))
        for metric, values in series:
            ordered = sorted(values)
            for q in (50, 95, 99):
                for scope in ("", self.scope):
                    if ordered:
                        out[vocab.scoped_key(scope, metric, f"p{q}")] = percentile(ordered, q)
        return out


def record_replayer(out: Path, viewsets: list[str], frames: int, size: str = "small") -> Path:
    """Record the suite's own replayer with ``apitrace trace --api egl`` (frame markers on)."""
    tool = shutil.which("apitrace")
    if tool is None:
        raise ConfigError(f"apitrace not found on PATH: {INSTALL}")
    cmd = [tool, "trace", "--api", "egl", "-o", str(out), sys.executable, "-m", "suites.workloads.graphics",
           "render", "--frame-markers", "--size", size, "--frames", str(frames), "--viewsets", *viewsets]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[3])
    if proc.returncode != 0 or not out.exists():
        raise BenchError(f"apitrace trace failed (exit {proc.returncode}): {last_error(proc.stderr)}")
    return out
