"""``python -m gpu_probe inventory | sample | record | probe``.

``--trace FILE`` replays a recorded NVML trace instead of the real driver
(the same wrapper and code paths), so GPU, MIG and vGPU hosts can be looked
at without one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from gpu_probe import inventory, probe
from gpu_probe.nvml import Nvml
from gpu_probe.sampler import Sampler
from gpu_probe.trace import RecordingNvml, ReplayNvml, TraceError, lib_from_env


def _nvml(trace: str | None) -> Nvml:
    """--trace's recording, else $GPU_PROBE_NVML_TRACE's (a node standing in for a GPU one), else the driver."""
    return Nvml(ReplayNvml.load(trace)) if trace else Nvml(lib_from_env()[0])


def cmd_inventory(args: argparse.Namespace) -> int:
    with _nvml(args.trace) as nv:
        print(json.dumps(inventory.collect(nv).as_dict(), indent=2, default=str))
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    with Sampler(args.rate_hz, nvml=_nvml(args.trace)) as sampler:
        time.sleep(args.seconds)
    print(json.dumps({"gpu_status": sampler.gpu_status, "achieved_rate_hz": round(sampler.achieved_rate_hz, 2),
                      "sampler_cpu_pct": round(sampler.cpu_pct, 3), "clock_events": sampler.clock_events_seen(),
                      **{k: round(v, 2) for k, v in sampler.aggregate().items()}}, indent=2))
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    """Record the real driver's answers (inventory, then one frame per sample) to a trace file."""
    rec = RecordingNvml(description=args.description)
    nv = Nvml(rec).open()
    inventory.collect(nv)
    sampler = Sampler(args.rate_hz, nvml=nv).prepare()
    period, end = 1.0 / args.rate_hz, time.monotonic() + args.seconds
    while time.monotonic() < end:
        rec.new_frame()
        sampler.collect()
        time.sleep(period)
    nv.close()
    Path(args.output).write_text(json.dumps(rec.to_dict(), indent=1))
    print(f"recorded {len(rec.frames)} frames, {len(rec.static)} static answers -> {args.output}"
          + (f" (nvmlInit failed: {rec.init_error})" if rec.init_error else ""))
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    result = probe.run(device=args.device, size_MiB=args.size_mib)
    print(json.dumps(result, indent=2))
    return 0 if result["status"] in ("ok", "skipped") else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_probe", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    inv = sub.add_parser("inventory", help="host, GPU (MIG, vGPU) and library inventory as JSON")
    inv.add_argument("--trace", help="replay this recorded NVML trace instead of the driver")
    sample = sub.add_parser("sample", help="sample host/GPU load for a while and print mean/p95/max")
    sample.add_argument("--seconds", type=float, default=3.0)
    sample.add_argument("--rate-hz", type=float, default=10.0)
    sample.add_argument("--trace", help="replay this recorded NVML trace instead of the driver")
    rec = sub.add_parser("record", help="record this host's NVML answers to a trace file")
    rec.add_argument("-o", "--output", required=True)
    rec.add_argument("--seconds", type=float, default=3.0)
    rec.add_argument("--rate-hz", type=float, default=5.0)
    rec.add_argument("--description", default="")
    pr = sub.add_parser("probe", help="pycuda micro-benchmarks: bandwidth, FP32/FP16, launch latency, copies")
    pr.add_argument("--device", type=int, default=0)
    pr.add_argument("--size-mib", type=int, default=256)
    args = parser.parse_args(argv)
    handler = {"inventory": cmd_inventory, "sample": cmd_sample, "record": cmd_record, "probe": cmd_probe}
    try:
        return handler[args.command](args)
    except TraceError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
