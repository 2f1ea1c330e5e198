"""The profiles shipped as files under ``configs/profile``, read as :class:`ProfileConfig` outside a composition:
the vGPU profiles of a GPU's family, which ``make size`` chooses among and gpu-check's k sizes (both read them here,
neither from the other)."""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf

from gpu_probe.datasheet import memory_MiB
from suites.config.profiles import GpuAccess, ProfileConfig, family
from suites.config.schema import CONFIG_DIR

__all__ = ["candidate_profiles", "load_profile"]


def load_profile(path: Path) -> ProfileConfig:
    raw = OmegaConf.load(path)
    raw.pop("defaults", None)
    profile = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(ProfileConfig), raw))
    assert isinstance(profile, ProfileConfig)
    return profile


def candidate_profiles(gpu: str, only: list[str]) -> list[ProfileConfig]:
    """The vGPU profiles (configs/profile) of ``gpu``'s family, largest framebuffer first; ``only`` where given."""
    fam = family(gpu)
    profiles = [load_profile(p) for p in sorted((CONFIG_DIR / "profile").glob("*.yaml"))]
    chosen = [p for p in profiles if p.name in only] if only else \
        [p for p in profiles if p.gpu_access is GpuAccess.vgpu and fam and family(p.gpu_model) == fam]
    return sorted(chosen, key=lambda p: (-(p.framebuffer_MiB or memory_MiB(p.gpu_model) or 0), p.name))
