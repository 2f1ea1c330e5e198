"""The sampler on real processes: per-guest CPU/RSS by process tree, robust to exits."""

import subprocess
import sys
import time

import pytest

from gpu_probe.sampler import Sampler

BURN = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass\n"
# A parent that sleeps while its child burns CPU: the guest's load is in its tree.
TREE = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BURN.format(s=1.5)!r}])\n"


def test_guest_cpu_is_counted_over_the_process_tree():
    busy = subprocess.Popen([sys.executable, "-c", TREE])
    idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    with Sampler(rate_hz=10) as sampler:
        sampler.watch("busy", busy.pid)
        sampler.watch("idle", idle.pid)
        busy.wait()
        idle.wait()
    busy_cpu = sampler.aggregate("busy.")
    idle_cpu = sampler.aggregate("idle.")
    assert busy_cpu["cpu_pct.p95"] > 60  # one core spinning, seen through the parent
    assert idle_cpu["cpu_pct.p95"] < 20
    assert busy_cpu["rss_MiB.max"] > 5
    assert sampler.achieved_rate_hz > 5  # loose: rate targets live in benchmarks


def test_exited_guest_gives_missing_values_not_errors():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with Sampler(rate_hz=20) as sampler:
        sampler.watch("gone", proc.pid)
        time.sleep(0.3)
    assert sampler.errors == 0
    assert all("gone.cpu_pct" not in r or r["gone.cpu_pct"] != r["gone.cpu_pct"] for r in sampler.rows)


def test_sampler_stops_when_the_block_raises():
    sampler = Sampler(rate_hz=20)
    with pytest.raises(RuntimeError):
        with sampler:
            time.sleep(0.2)
            raise RuntimeError("workload blew up")
    n = len(sampler.rows)
    time.sleep(0.2)
    assert n >= 2 and len(sampler.rows) == n  # thread ended with the block


def test_host_columns_are_aggregated():
    with Sampler(rate_hz=20) as sampler:
        time.sleep(0.3)
    agg = sampler.aggregate()
    assert {"host_cpu_pct.mean", "host_cpu_pct.p95", "host_cpu_pct.max", "host_mem_used_MiB.max"} <= set(agg)


def test_rate_must_be_positive():
    with pytest.raises(ValueError):
        Sampler(rate_hz=0)
