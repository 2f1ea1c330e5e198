"""Malformed overrides: one clear line, exit 2, and no guest process ever started."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.helpers import run_bench

BAD = {  # scenario name: (overrides, text the one line must contain)
    "unknown-profile": (["profile=m60-9q"], "Could not find 'profile/m60-9q' (choose from: a100-40-10c"),
    "unknown-workload": (["workload=resnet-9000"], "workload/resnet-9000"),
    "unknown-scenario": (["scenario=nope"], "scenario/nope"),
    "vcpus-not-a-number": (["profile.vcpus=two"], "profile.vcpus"),
    "negative-vcpus": (["profile.vcpus=-2"], "profile.vcpus: must be >= 1"),
    "zero-guests": (["scenario.guests=0"], "scenario.guests"),
    "negative-batch": (["workload.batch_size=-8"], "workload.batch_size"),
    "negative-lr": (["workload.lr=-0.1"], "workload.lr"),
    "unknown-key": (["workload.lerning_rate=0.1"], "lerning_rate"),
    "bad-enum": (["profile.gpu_access=cloud"], "expected one of [cpu, passthrough, vgpu]"),
    "zero-sample-rate": (["sampler.rate_hz=0"], "sampler.rate_hz"),
    "vgpu-without-framebuffer": (["profile.framebuffer_MiB=null"], "framebuffer"),
    "cpu-profile-with-gpus": (["profile=cpu", "profile.gpus=2"], "a cpu profile has no GPU"),
    "too-many-vcpus": (["profile.vcpus=64"], "64 vCPUs > "),
    "too-much-guest-memory": (["profile.memory_MiB=10000000"], "host memory"),
    "missing-data": (["data.synthetic=false"], "MNIST not found"),
    "unknown-scheduler": (["profile.scheduler=round-robin"], "profile.scheduler: must be one of best-effort"),
    "mig-without-slices": (["profile=h100-mig-1-10c", "profile.mig_slices=null"], "1..7 compute slices"),
    "mps-share-over-100": (["profile.mps_share_pct=150"], "profile.mps_share_pct: must be 1..100"),
    "unknown-scenario-kind": (["scenario.kind=bogus"], "scenario.kind: must be one of plain, mixed"),
    "study-unknown-profile": (["scenario=mixed", "scenario.mixed.profiles=[m60-9q]"], "phase m60-9q/cad"),
    "mix-unknown-workload": (["scenario=mixed-once", "scenario.groups=[{workload:nope}]"], "scenario.groups"),
    "unknown-viewset": (["workload=graphics-replay", "workload.viewsets=[cathedral]"], "unknown viewset 'cathedral'"),
    "unknown-scene-size": (["workload=graphics-replay", "workload.size=huge"], "workload.size: must be one of"),
    "odd-msaa-samples": (["workload=graphics-replay", "workload.samples=3"], "workload.samples"),
    "apitrace-without-trace": (["workload=apitrace-replay"], "missing mandatory value: trace"),
    "apitrace-trace-missing": (["workload=apitrace-replay", "workload.trace=nowhere.trace"], "does not exist"),
    "framebuffer-beyond-any-gpu": (["profile=passthrough-1gpu", "profile.framebuffer_MiB=99999999999999"],
                                   "profile.framebuffer_MiB: 99999999999999 MiB is more than the largest known GPU's"),
    "framebuffer-beyond-its-gpu": (["profile.framebuffer_MiB=16384"],
                                   "16384 MiB is more than the Tesla M60's 8192 MiB"),
    "infinite-lr": (["workload.lr=inf"], "workload.lr: must be a finite number, got inf"),
    "zero-epochs": (["workload.epochs=0"], "workload.epochs"),
    "momentum-of-one": (["workload.momentum=1"], "workload.momentum: must be in (0, 1)"),
    "unknown-tta-level": (["workload=cifar10-torch", "workload.tta_level=3"], "workload.tta_level: must be 0, 1 or 2"),
    "unknown-compile-mode": (["workload.compile=true", "workload.compile_mode=fastest"],
                             "workload.compile_mode: must be one of default"),
    "seed-beyond-32-bits": (["seed=99999999999999999999"], "seed: must be <= 2147483647"),
    "synthetic-set-beyond-memory": (["data.synthetic_train=1000000000"], "synthetic images take up to"),
    "mistyped-tracking-scheme": (["tracking_uri=foo://bar"], "tracking_uri: unknown scheme 'foo://'"),
    "empty-tracking-uri": (["tracking_uri="], "tracking_uri: must name an MLflow store"),
    "profile-name-past-a-file-name": ([f"profile={'m' * 5000}"], "profile: a value of 5000 bytes; Hydra looks it up"),
    "key-past-a-file-name": ([f"+{'k' * 300}=1"], "a key of 300 bytes; Hydra looks it up as a file name"),
    "ray-excludes-drop-a-suite-module": (["backend=ray", "ray.address=127.0.0.1:1", "ray.working_dir=.",
                                          "ray.excludes=[data]"],
                                         "module file(s) of suites.data (the guests import them), dropped by 'data'"),
    "render-target-too-large": (["workload=graphics-replay", "workload.resolution=[16384,16384]", "workload.samples=8"],
                                "16384x16384 x MSAA 8 = 2147483648 samples is more than 536870912"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_override_is_one_line_and_starts_nothing(tmp_path: Path, name: str):
    overrides, expected = BAD[name]
    run = run_bench(tmp_path, *overrides, fresh_store=True)
    err_lines = [ln for ln in run.proc.stderr.splitlines() if ln.strip()]
    assert run.proc.returncode == 2, run.proc.stderr
    assert len(err_lines) == 1, run.proc.stderr
    assert err_lines[0].startswith("error: ") and expected in err_lines[0]
    assert "Traceback" not in run.proc.stdout + run.proc.stderr
    assert not list(run.run_dir.glob("g*.log")), "a guest was started"
    assert not (tmp_path / "mlflow.db").exists()
    assert not run.run_dir.exists(), "a run that never started left a run directory"
