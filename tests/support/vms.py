"""The VM image the tests boot (built by make setup-vm, or MISSING with why), and the PCI GPUs and mdev types of a
fake sysfs."""

from __future__ import annotations

from pathlib import Path

from suites.backends.vm import image, qemu
from suites.config.profiles import GpuAccess, ProfileConfig
from suites.errors import ConfigError

IMAGE: Path | None = None  # no image here (a fresh clone before make setup-vm): MISSING says why, tests skip
try:
    IMAGE = image.find(image.DEFAULT_DIR)
    qemu.tools()
    MISSING = ""
except ConfigError as exc:
    MISSING = str(exc)


# --- fake sysfs: GPUs for VFIO and mdev vGPU --------------------------------------------------------------------
def pci_gpu(sysfs: Path, address: str, driver: str, vendor: str = "0x10de", cls: str = "0x030200") -> None:
    dev = sysfs / "bus" / "pci" / "devices" / address
    dev.mkdir(parents=True)
    (dev / "vendor").write_text(vendor + "\n")
    (dev / "class").write_text(cls + "\n")
    drv = sysfs / "bus" / "pci" / "drivers" / driver
    drv.mkdir(parents=True, exist_ok=True)
    (dev / "driver").symlink_to(drv)


def mdev_type(sysfs: Path, parent: str, type_id: str, name: str, available: int) -> Path:
    t = sysfs / "class" / "mdev_bus" / parent / "mdev_supported_types" / type_id
    t.mkdir(parents=True)
    (t / "name").write_text(name + "\n")
    (t / "available_instances").write_text(f"{available}\n")
    (t / "create").write_text("")
    return t


def profile(name: str, access: GpuAccess, gpus: int = 1) -> ProfileConfig:
    return ProfileConfig(name=name, gpu_access=access, gpus=gpus,
                         framebuffer_MiB=8192 if access is GpuAccess.vgpu else None)


def machine(tmp_path: Path, accel: str, vfio: list[str]) -> qemu.Machine:
    img = image.Image(tmp_path, tmp_path / "vmlinuz", tmp_path / "initrd.gz", "6.1.0-test", {})
    return qemu.Machine("g0", 2, 4096, accel, img, tmp_path / "g0.sh", tmp_path / "fs", tmp_path / "qmp",
                        tmp_path / "g0.log", vfio)
