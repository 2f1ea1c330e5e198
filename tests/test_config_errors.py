"""Malformed overrides: one clear line, exit 2, and no guest process ever started."""

from pathlib import Path

import pytest

from suites.config.profiles import ProfileKind
from suites.config.schema import BenchConfig

from .helpers import compose_config, run_bench

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
    "bad-enum": (["profile.kind=cloud"], "expected one of [cpu, passthrough, vgpu]"),
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
    "study-unknown-profile": (["scenario=mixed", "scenario.study.profiles=[m60-9q]"], "phase m60-9q/cad"),
    "mix-unknown-workload": (["scenario=mixed-once", "scenario.mix=[{workload:nope}]"], "scenario.mix"),
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
    "render-target-too-large": (["workload=graphics-replay", "workload.resolution=[16384,16384]", "workload.samples=8"],
                                "16384x16384 x MSAA 8 = 2147483648 samples is more than 536870912"),
}


@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_override_is_one_line_and_starts_nothing(tmp: Path, name: str):
    overrides, expected = BAD[name]
    run = run_bench(tmp, *overrides, timeout=60, fresh_store=True)
    err_lines = [ln for ln in run.proc.stderr.splitlines() if ln.strip()]
    assert run.proc.returncode == 2, run.proc.stderr
    assert len(err_lines) == 1, run.proc.stderr
    assert err_lines[0].startswith("error: ") and expected in err_lines[0]
    assert "Traceback" not in run.proc.stdout + run.proc.stderr
    assert not list(run.run_dir.glob("g*.log")), "a guest was started"
    assert not (tmp / "mlflow.db").exists()
    assert not run.run_dir.exists(), "a run that never started left a run directory"



def test_profile_override_composes_into_dataclasses():
    cfg = compose_config("profile=m60-2q", "scenario=concurrent")
    assert isinstance(cfg, BenchConfig)
    assert cfg.profile.kind is ProfileKind.vgpu
    assert (cfg.profile.framebuffer_MiB, cfg.profile.max_per_gpu) == (2048, 4)
    assert cfg.scenario.guests == 2
    assert cfg.workload.name == "mnist-torch"


@pytest.mark.parametrize("name,fb,per_gpu", [("m60-1q", 1024, 8), ("m60-2q", 2048, 4),
                                             ("m60-4q", 4096, 2), ("m60-8q", 8192, 1)])
def test_m60_profiles_carry_the_catalog_values(name: str, fb: int, per_gpu: int):
    p = compose_config(f"profile={name}").profile
    assert (p.framebuffer_MiB, p.max_per_gpu, p.gpus, p.gpu_model) == (fb, per_gpu, 1, "Tesla M60")


def test_explicit_data_root_beats_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BENCH_DATA_ROOT", "/from/env")
    assert compose_config().data.root == "/from/env"
    assert compose_config("data.root=/explicit").data.root == "/explicit"


@pytest.mark.parametrize("args, says", [
    (["-m", "seed=range(0)"], "the sweep has no points (seed=range(0) gives no value): nothing to run"),
    (["--cfg", "job", "profile=m60-9q"], "Could not find 'profile/m60-9q'"),
    (["--cfg", "job", "-m", "profile=m60-1q,m60-9q"], "sweep point profile=m60-9q: "),
    (["--cfg", "job", f"+{'k' * 300}=1"], "a key of 300 bytes"),
])
def test_sweeps_and_hydras_printing_flags_are_checked_before_hydra_starts(args: list[str], says: str):
    """Issue 53, item 5: a 0-point sweep was an IndexError traceback, and ``--cfg job`` with a bad value Hydra's
    own multi-line error."""
    from hydra.errors import HydraException

    from suites.config.schema import one_line, register_configs
    from suites.errors import BenchError
    from suites.pipeline.command_line import parse_command, precheck

    register_configs()
    with pytest.raises((BenchError, HydraException)) as exc:  # what the command turns into its one error: line
        precheck(parse_command(args))
    assert says in one_line(exc.value) and "\n" not in one_line(exc.value)


def test_a_long_value_that_is_not_a_file_name_is_taken():
    from suites.config.schema import register_configs
    from suites.pipeline.command_line import parse_command, precheck

    register_configs()
    assert precheck(parse_command(["--cfg", "job", f"+note='{'a b ' * 200}'"])).composed is None
