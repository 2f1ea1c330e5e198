"""GPUs a VM can be given, read from sysfs: passthrough (VFIO) and vGPU (mediated devices).

Passthrough: a whole NVIDIA GPU bound to ``vfio-pci`` (QEMU: ``-device vfio-pci,host=<address>``); such a GPU is
invisible to the host's driver and NVML, so it is found here, not in the NVML inventory. vGPU: NVIDIA vGPU for KVM
offers each profile as an mdev type of the physical GPU (``/sys/class/mdev_bus/<address>/mdev_supported_types/
<type>/name`` reads e.g. "GRID M60-8Q"); an instance is made for the run by writing a UUID to the type's
``create`` and removed after it by writing 1 to its ``remove`` (QEMU: ``-device vfio-pci,sysfsdev=...``). Every
function takes the sysfs root, so tests run them against directory fixtures.

An instance outlives a runner killed with SIGKILL: each is noted in a ledger (suites/backends/leftovers.py) before
it is made, and the next vGPU run removes those whose maker is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from suites.backends.leftovers import Ledger
from suites.config.profiles import GpuAccess, ProfileConfig, type_matches
from suites.errors import PlacementError

NVIDIA = "0x10de"
DISPLAY_CLASS = "0x03"  # PCI class 03xxxx: VGA / 3D controller
LEDGER = Ledger("mdev")


@dataclass(frozen=True)
class PciGpu:
    address: str  # 0000:3b:00.0
    driver: str  # vfio-pci, nvidia, none


@dataclass(frozen=True)
class MdevType:
    parent: str  # the physical GPU's PCI address
    type_id: str  # nvidia-18
    name: str  # GRID M60-8Q
    available: int  # instances it can still make

    def path(self, sysfs: Path) -> Path:
        return sysfs / "class" / "mdev_bus" / self.parent / "mdev_supported_types" / self.type_id


def nvidia_gpus(sysfs: Path) -> list[PciGpu]:
    """Every NVIDIA display-class PCI function on this host, with the driver it is bound to."""
    out = []
    for dev in sorted((sysfs / "bus" / "pci" / "devices").glob("*")):
        if _read(dev / "vendor") != NVIDIA or not _read(dev / "class").startswith(DISPLAY_CLASS):
            continue
        driver = dev / "driver"
        out.append(PciGpu(dev.name, driver.resolve().name if driver.exists() else "none"))
    return out


def mdev_types(sysfs: Path) -> list[MdevType]:
    out = []
    for parent in sorted((sysfs / "class" / "mdev_bus").glob("*")):
        for t in sorted((parent / "mdev_supported_types").glob("*")):
            avail = _read(t / "available_instances")
            out.append(MdevType(parent.name, t.name, _read(t / "name"), int(avail) if avail.isdigit() else 0))
    return out


def passthrough_for(profile: ProfileConfig, n: int, sysfs: Path) -> list[list[str]]:
    """``n`` guests' ``vfio-pci`` device arguments, ``profile.gpus`` GPUs each, or one PlacementError naming what
    is missing."""
    gpus = nvidia_gpus(sysfs)
    free = [g for g in gpus if g.driver == "vfio-pci"]
    need = n * profile.gpus
    if len(free) < need:
        seen = ", ".join(f"{g.address} ({g.driver})" for g in gpus) or "none"
        raise PlacementError(f"backend=vm: {n} guest(s) of {profile.name} need {need} NVIDIA GPU(s) bound to "
                             f"vfio-pci; this host has {len(free)} (NVIDIA GPUs: {seen}; bind one with driverctl "
                             "or vfio-pci.ids)")
    return [[f"host={g.address}" for g in free[i * profile.gpus:(i + 1) * profile.gpus]] for i in range(n)]


def vgpu_types_for(profile: ProfileConfig, n: int, sysfs: Path,
                   reclaimable: dict[tuple[str, str], int] | None = None) -> list[MdevType]:
    """The mdev type (and parent GPU) each of ``n`` guests gets, filling one GPU before the next, or one
    PlacementError naming what is missing. ``reclaimable``: instances per (parent, type id) that killed runs left,
    whose slots are free once they are removed (:func:`reclaimable`)."""
    types = mdev_types(sysfs)
    more = reclaimable or {}
    matching = [t for t in types if type_matches(profile.name, t.name)]
    slots = [t for t in matching for _ in range(t.available + more.get((t.parent, t.type_id), 0))]
    if len(slots) < n:
        offered = ", ".join(sorted({t.name for t in types})) or "none (no NVIDIA vGPU manager for KVM: no mdev_bus)"
        raise PlacementError(f"backend=vm: {n} guest(s) of vGPU profile {profile.name} need {n} free instance(s) of "
                             f"an mdev type named like 'GRID {profile.name.upper()}'; this host has {len(slots)} "
                             f"(mdev types offered: {offered})")
    return slots[:n]


def create_mdev(t: MdevType, uuid: str, sysfs: Path, ledger: Ledger = LEDGER) -> str:
    """Make one instance of ``t``, noted in the ledger first; the ``vfio-pci`` argument that gives it to QEMU."""
    ledger.note(uuid, sysfs=str(sysfs))
    (t.path(sysfs) / "create").write_text(uuid)
    return f"sysfsdev={mdev_path(uuid, sysfs)}"


def remove_mdev(uuid: str, sysfs: Path, ledger: Ledger = LEDGER) -> bool:
    """Remove an instance this run made, and its ledger note; False where the instance is already gone."""
    remove = mdev_path(uuid, sysfs) / "remove"
    there = remove.exists()
    if there:
        remove.write_text("1")
    ledger.forget(uuid)
    return there


def reclaimable(sysfs: Path, ledger: Ledger = LEDGER) -> dict[tuple[str, str], int]:
    """Instances under ``sysfs`` that runs no longer alive made, per (parent GPU, type id) as the kernel links
    each (``<device>/mdev_type``); read only, nothing removed (that is :func:`reclaim_mdevs`, once placed)."""
    out: dict[tuple[str, str], int] = {}
    for uuid, made in ledger.orphans():
        if made.get("sysfs") != str(sysfs):
            continue
        mdev_type = (mdev_path(uuid, sysfs) / "mdev_type").resolve()
        if mdev_type.is_dir() and mdev_type.parent.name == "mdev_supported_types":
            key = (mdev_type.parent.parent.name, mdev_type.name)
            out[key] = out.get(key, 0) + 1
    return out


def reclaim_mdevs(sysfs: Path, ledger: Ledger = LEDGER) -> list[str]:
    """Remove the instances under ``sysfs`` that runs no longer alive made and left (killed with SIGKILL);
    'UUID (pid N)' for each, to be said."""
    reclaimed = []
    for uuid, made in ledger.orphans():
        if not Path(made.get("sysfs", "")).is_dir():  # a sysfs tree gone (a test's fixture): nothing to remove
            ledger.forget(uuid)
        if made.get("sysfs") == str(sysfs):
            remove_mdev(uuid, sysfs, ledger)
            reclaimed.append(f"{uuid} (pid {made.get('pid')})")
    return reclaimed


def mdev_path(uuid: str, sysfs: Path) -> Path:
    return sysfs / "bus" / "mdev" / "devices" / uuid


def needs_device(profile: ProfileConfig) -> bool:
    return profile.gpu_access in (GpuAccess.passthrough, GpuAccess.vgpu)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""
