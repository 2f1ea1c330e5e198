"""``python -m suites.workloads.graphics``: maintain traces and references, or render outside a guest.

    record               rewrite traces/*.json from the viewset definitions (deterministic)
    golden [--images]    replay and store this renderer's checksums (and reference PNGs)
    render [...]         replay in this process and print per-viewset fps; with
                         --frame-markers this is what `apitrace trace --api egl` records
    apitrace OUT [...]   record `render --frame-markers` into OUT with apitrace (a real
                         .trace for the apitrace-replay workload)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from suites.errors import BenchError
from suites.workloads.base import GuestContext
from suites.workloads.graphics import frame_checks as checks
from suites.workloads.graphics import renderer
from suites.workloads.graphics.apitrace import record_replayer
from suites.workloads.graphics.replay import GraphicsReplay, GraphicsReplayConfig
from suites.workloads.graphics.viewsets import VIEWSETS, write_all
from suites.workloads.timing import StepMeter


def replay_here(args: argparse.Namespace, verify: bool, golden_dir: str | None = None) -> Any:
    """The graphics-replay workload, in this process, with a plain StepMeter."""
    cfg = GraphicsReplayConfig(viewsets=args.viewsets, size=args.size, frames_per_test=args.frames,
                               verify=verify, frame_markers=getattr(args, "frame_markers", False),
                               golden_dir=str(Path(golden_dir).resolve()) if golden_dir else None)
    cfg.check()
    data = GraphicsReplay.resolve_data(cfg, None, 0)
    w = GraphicsReplay(cfg, GuestContext("local", [], [], None, data, 0))
    w.prepare()
    meter = StepMeter(0, w.total_steps())
    meter.start()
    w.train(meter)
    return w, w.evaluate()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m suites.workloads.graphics", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("record", help="rewrite the shipped frame traces")
    for name in ("golden", "render", "apitrace"):
        p = sub.add_parser(name)
        if name == "apitrace":
            p.add_argument("out")
        p.add_argument("--viewsets", nargs="+", default=list(VIEWSETS))
        p.add_argument("--size", default="small")
        p.add_argument("--frames", type=int, default=None, help="frames per test")
        if name == "golden":
            p.add_argument("--images", action="store_true", help="also write reference PNGs")
        elif name == "render":
            p.add_argument("--frame-markers", action="store_true", help="eglSwapBuffers after each frame")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "record":
            for path in write_all():
                print(f"wrote {path}")
        elif args.cmd == "golden":
            record_goldens(args)
        elif args.cmd == "apitrace":
            out = record_replayer(Path(args.out).resolve(), args.viewsets, args.frames or 10, args.size)
            print(f"wrote {out}")
        else:
            _, metrics = replay_here(args, verify=True)
            for vs in args.viewsets:
                print(f"{vs}: {metrics[f'{vs}.fps']:.1f} fps, p95 {metrics[f'{vs}.frame_time_ms.p95']:.1f} ms, "
                      f"composite {metrics[f'{vs}.composite_score']:.1f}")
    except BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def record_goldens(args: argparse.Namespace) -> None:
    """Replay, then store the frames' checksums for this renderer (the md5s the replay just verified)."""
    w, _ = replay_here(args, verify=True)
    goldens = checks.Goldens()
    shape = w.cfg.geometry()[1]
    for verdicts in w.verdicts.values():
        for v in verdicts:
            goldens.table.setdefault(w.renderer_name, {})[v.key] = v.md5
    if args.images:  # reference PNGs need the pixels themselves: render those frames once more
        for vs, trace in w.traces.items():
            parts, meshes = w.scenes[vs]
            r = renderer.SceneRenderer(w.gl, parts, meshes, shape, w.cfg.samples, w.cfg.geometry()[2], trace.seed)
            for test in trace.tests:
                for k in test.checksum_frames:
                    r.draw(test.frames[k], test.mode)
                    key = checks.frame_key(vs, w.cfg.size, shape, w.cfg.samples, test.name, k)
                    goldens.record(w.renderer_name, key, r.pixels(), shape, image=True)
            r.release()
    print(f"wrote {goldens.save()} ({w.renderer_name})")


if __name__ == "__main__":
    sys.exit(main())
