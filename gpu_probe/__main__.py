"""``python -m gpu_probe inventory | sample``: what this host has, and what it is doing."""

from __future__ import annotations

import argparse
import json
import time

from gpu_probe import inventory
from gpu_probe.sampler import Sampler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_probe", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("inventory", help="host, GPU and library inventory as JSON")
    sample = sub.add_parser("sample", help="sample host/GPU load for a while and print mean/p95/max")
    sample.add_argument("--seconds", type=float, default=3.0)
    sample.add_argument("--rate-hz", type=float, default=10.0)
    args = parser.parse_args(argv)
    if args.command == "inventory":
        print(json.dumps(inventory.collect().as_dict(), indent=2, default=str))
        return 0
    with Sampler(args.rate_hz) as sampler:
        time.sleep(args.seconds)
    print(json.dumps({"gpu_status": sampler.gpu_status, "achieved_rate_hz": round(sampler.achieved_rate_hz, 2),
                      **{k: round(v, 2) for k, v in sampler.aggregate().items()}}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
