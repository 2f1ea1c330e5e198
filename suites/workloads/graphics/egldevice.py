"""Which EGL device is the guest's GPU: matched by UUID or PCI bus id, never "device 0".

EGL numbers its devices itself and ignores ``CUDA_VISIBLE_DEVICES``, so a CAD
guest placed on the second GPU of a host rendered on the first. The guest
knows its GPU by the UUID its placement gave it; NVIDIA's EGL reports each
device's UUID (``EGL_EXT_device_persistent_id``) and DRM node
(``EGL_EXT_device_drm``, whose sysfs link names the PCI address), so the match
is exact. :func:`choose` is pure (tested with fake device lists);
:func:`list_devices` asks libEGL through ctypes.
"""

from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass
from pathlib import Path

EGL_EXTENSIONS = 0x3055
EGL_DRM_DEVICE_FILE_EXT = 0x3233
EGL_DEVICE_UUID_EXT = 0x335C
MAX_DEVICES = 32


# Where libglvnd looks for EGL vendor files when __EGL_VENDOR_LIBRARY_FILENAMES / _DIRS do not say.
GLVND_DIRS = ("/etc/glvnd/egl_vendor.d", "/usr/share/glvnd/egl_vendor.d", "/usr/local/share/glvnd/egl_vendor.d")
EGL_FIX = ("in a container: NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics (or all); on a host: the driver's "
           "EGL library (libnvidia-egl / libEGL_nvidia) and its 10_nvidia.json, or __EGL_VENDOR_LIBRARY_FILENAMES "
           "pointing at it")


def vendor_files(env: dict[str, str] | os._Environ[str] = os.environ) -> list[Path]:
    """The EGL vendor files libglvnd will read, in its order."""
    if env.get("__EGL_VENDOR_LIBRARY_FILENAMES"):
        return [Path(f) for f in env["__EGL_VENDOR_LIBRARY_FILENAMES"].split(":") if f]
    dirs = env["__EGL_VENDOR_LIBRARY_DIRS"].split(":") if env.get("__EGL_VENDOR_LIBRARY_DIRS") else GLVND_DIRS
    return sorted((f for d in dirs if Path(d).is_dir() for f in Path(d).glob("*.json")), key=lambda f: f.name)


def nvidia_egl_problem(env: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """Why NVIDIA's EGL will not be among the devices (only Mesa's llvmpipe would render, and a GPU guest would be
    timed on the CPU), or None. Asked before a CAD guest spends GPU time."""
    files = vendor_files(env)
    libs = []
    for f in files:
        try:
            lib = str(json.loads(f.read_text()).get("ICD", {}).get("library_path", ""))
        except (OSError, ValueError, AttributeError):
            continue
        libs.append(lib)
        if "nvidia" in lib.lower():
            try:
                ctypes.CDLL(lib)
                return None
            except OSError as exc:
                return f"NVIDIA's EGL vendor file {f} names {lib}, which does not load ({exc}); {EGL_FIX}"
    listed = ", ".join(Path(lib).name for lib in libs if lib) or "none"
    return f"no NVIDIA EGL vendor library (EGL vendors found: {listed}); {EGL_FIX}"


class EglDeviceError(RuntimeError):
    """No EGL device is the guest's GPU, or EGL cannot list its devices."""


@dataclass(frozen=True)
class EglDevice:
    index: int
    uuid: str | None  # "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML writes it
    pci: str | None  # "0000:3b:00.0"
    drm: str | None  # "/dev/dri/card1"


def uuid_text(raw: bytes) -> str:
    h = raw.hex()
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def pci_key(bus_id: str | None) -> str | None:
    """A PCI address in one spelling: NVML's "00000000:3B:00.0" and sysfs' "0000:3b:00.0" alike."""
    if not bus_id or bus_id.count(":") != 2:
        return None
    domain, bus, rest = bus_id.lower().split(":")
    try:
        return f"{int(domain, 16):04x}:{int(bus, 16):02x}:{rest}"
    except ValueError:
        return None


def choose(devices: list[EglDevice], uuid: str | None, pci: str | None) -> tuple[int, str]:
    """(EGL device index, how it was matched) for the GPU with ``uuid`` / PCI ``pci``; EglDeviceError if none is."""
    for d in devices:
        if uuid and d.uuid and d.uuid.lower() == uuid.lower():
            return d.index, f"EGL device {d.index}: UUID {uuid}"
    want = pci_key(pci)
    for d in devices:
        if want and pci_key(d.pci) == want:
            return d.index, f"EGL device {d.index}: PCI {want}"
    listed = "; ".join(f"{d.index}: {d.uuid or '-'} {d.pci or '-'}" for d in devices) or "none"
    raise EglDeviceError(f"no EGL device is the guest's GPU {uuid or '?'} (PCI {want or '?'}); EGL devices: {listed}")


def drm_pci(drm: str | None) -> str | None:
    """/dev/dri/card1 -> the PCI address its sysfs device link names."""
    if not drm:
        return None
    link = f"/sys/class/drm/{os.path.basename(drm)}/device"
    try:
        return os.path.basename(os.path.realpath(link)) if os.path.exists(link) else None
    except OSError:
        return None


def list_devices(libegl: str | None = None) -> list[EglDevice]:
    """Every EGL device with what it says of itself (EGL_EXT_device_enumeration and friends)."""
    try:
        egl = ctypes.CDLL(libegl or "libEGL.so.1")
    except OSError as exc:
        raise EglDeviceError(f"libEGL cannot be loaded ({exc})") from None
    egl.eglGetProcAddress.restype = ctypes.c_void_p
    egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]

    def proc(name: str, restype: object, *argtypes: object) -> object:
        addr = egl.eglGetProcAddress(name.encode())
        if not addr:
            raise EglDeviceError(f"EGL has no {name} (no device enumeration)")
        return ctypes.CFUNCTYPE(restype, *argtypes)(addr)

    vp, i32 = ctypes.c_void_p, ctypes.c_int32
    query_devices = proc("eglQueryDevicesEXT", ctypes.c_uint, i32, ctypes.POINTER(vp), ctypes.POINTER(i32))
    query_string = proc("eglQueryDeviceStringEXT", ctypes.c_char_p, vp, i32)
    try:
        query_binary = proc("eglQueryDeviceBinaryEXT", ctypes.c_uint, vp, i32, i32, vp, ctypes.POINTER(i32))
    except EglDeviceError:
        query_binary = None
    handles, count = (vp * MAX_DEVICES)(), i32(0)
    if not query_devices(MAX_DEVICES, handles, ctypes.byref(count)):  # type: ignore[operator]
        raise EglDeviceError("eglQueryDevicesEXT failed")
    out = []
    for i in range(count.value):
        exts = (query_string(handles[i], EGL_EXTENSIONS) or b"").decode()  # type: ignore[operator]
        drm = (query_string(handles[i], EGL_DRM_DEVICE_FILE_EXT) or b"").decode() or None \
            if "EGL_EXT_device_drm" in exts else None  # type: ignore[operator]
        uuid = None
        if query_binary is not None and "EGL_EXT_device_persistent_id" in exts:
            buf, size = (ctypes.c_ubyte * 16)(), i32(0)
            if query_binary(handles[i], EGL_DEVICE_UUID_EXT, 16, buf, ctypes.byref(size)) and size.value == 16:  # type: ignore[operator]
                uuid = uuid_text(bytes(buf))
        out.append(EglDevice(i, uuid, drm_pci(drm), drm))
    return out
