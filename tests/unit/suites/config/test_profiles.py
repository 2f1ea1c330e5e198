"""Tests of ``suites/config/profiles.py``."""

from __future__ import annotations

import pytest

from suites.backends.placement import place_on_host as place
from suites.config.profiles import GpuAccess, ProfileConfig, type_matches
from suites.config.schema import BenchConfig
from suites.errors import PlacementError
from tests.support.helpers import REPO, compose_config
from tests.support.hosts import host

CATALOG = sorted(p.stem for p in (REPO / "configs" / "profile").glob("*.yaml"))


def test_profile_override_composes_into_dataclasses():
    cfg = compose_config("profile=m60-2q", "scenario=concurrent")
    assert isinstance(cfg, BenchConfig)
    assert cfg.profile.gpu_access is GpuAccess.vgpu
    assert (cfg.profile.framebuffer_MiB, cfg.profile.max_per_gpu) == (2048, 4)
    assert cfg.scenario.guests == 2
    assert cfg.workload.name == "mnist-torch"


@pytest.mark.parametrize("name,fb,per_gpu", [("m60-1q", 1024, 8), ("m60-2q", 2048, 4),
                                             ("m60-4q", 4096, 2), ("m60-8q", 8192, 1)])
def test_m60_profiles_carry_the_catalog_values(name: str, fb: int, per_gpu: int):
    p = compose_config(f"profile={name}").profile
    assert (p.framebuffer_MiB, p.max_per_gpu, p.gpus, p.gpu_model) == (fb, per_gpu, 1, "Tesla M60")


def test_mig_backed_vgpu_type_names_match_their_profiles():
    assert type_matches("h100-mig-3-40c", "NVIDIA H100-3-40C")
    assert type_matches("a100-40-mig-3-20c", "GRID A100-3-20C")
    assert type_matches("a100-40-10c", "NVIDIA A100-10C") and not type_matches("a100-40-10c", "NVIDIA A100-3-20C")
    assert not type_matches("h100-mig-3-40c", "NVIDIA H100-40C")


def test_guests_get_disjoint_cpus_until_overcommit_is_allowed():
    prof = ProfileConfig(name="cpu", gpu_access=GpuAccess.cpu, vcpus=2, memory_MiB=1024)
    ps = place(prof, 3, host(), list(range(6)))
    assert [p.vcpus for p in ps] == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(PlacementError, match="4 guest\\(s\\) x 2 vCPUs = 8 vCPUs > 6 host cores"):
        place(prof, 4, host(), list(range(6)))
    over = place(prof, 4, host(), list(range(6)), cpu_overcommit=True)
    assert over[3].vcpus == [0, 1]


@pytest.mark.parametrize("name,per_gpu,fb", [("m60-0q", 16, 512), ("m60-1q", 8, 1024), ("m60-2q", 4, 2048),
                                             ("m60-4q", 2, 4096), ("m60-8q", 1, 8192), ("t4-16q", 1, 16384),
                                             ("h100-20c", 4, 20480), ("h100-mig-1-10c", 7, 10240),
                                             ("h100-mig-3-40c", 2, 40960), ("a100-40-mig-2-10c", 3, 10240),
                                             ("l40s-1q", 32, 1024)])
def test_catalog_entries_hold_the_vendor_numbers(name: str, per_gpu: int, fb: int):
    prof = compose_config(f"profile={name}").profile
    assert (prof.max_per_gpu, prof.framebuffer_MiB) == (per_gpu, fb)
    assert (prof.scheduler == "mig") == ("-mig-" in name)


def test_passthrough_takes_whole_gpus():
    prof = ProfileConfig(name="passthrough-2gpu", gpu_access=GpuAccess.passthrough, gpus=2, vcpus=1, memory_MiB=1024)
    ps = place(prof, 2, host(gpus=4), list(range(8)))
    assert [p.gpu_indices for p in ps] == [[0, 1], [2, 3]]
    with pytest.raises(PlacementError, match="6 GPUs > 4"):
        place(prof, 3, host(gpus=4), list(range(8)))


def test_a_profiles_gpu_access_given_under_its_old_name_kind_is_read_said_and_recorded_under_both(tmp_path):
    """``kind`` was a profile's GPU access until issue 75 (a *kind* is a run's kind now): an old profile file or
    ``profile.kind=`` on a command line is still read for a release, with a warning, and a run's params carry both."""
    from omegaconf import OmegaConf

    from suites.config.compose import compose_run
    from suites.config.scenario import with_old_names
    from suites.config.schema import register_configs
    from suites.record.store import flatten

    register_configs()
    with pytest.warns(FutureWarning, match=r"^profile.kind is profile.gpu_access now"):
        old = compose_run(["profile=m60-8q", "profile.kind=passthrough"])
    assert old.cfg.profile.gpu_access is GpuAccess.passthrough and old.cfg.profile.kind is None
    params = with_old_names(flatten(OmegaConf.to_container(old.dcfg, resolve=True)))
    assert params["profile.gpu_access"] == params["profile.kind"] == GpuAccess.passthrough
    with pytest.warns(FutureWarning):  # a profile file of before: kind, no gpu_access
        assert ProfileConfig(name="old", kind=GpuAccess.cpu).gpu_access is GpuAccess.cpu
    with pytest.raises(Exception, match="profile.gpu_access: must be one of cpu, passthrough, vgpu, got none"):
        ProfileConfig(name="none", vcpus=1).check()
