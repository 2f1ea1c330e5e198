"""Whether CUDA starts: ``cuInit`` and the device count through the driver's ``libcuda`` (ctypes, no framework).

Asked in a child process (:func:`check`): a process that initialised CUDA and then forks (a data loader's workers)
has children that cannot use it, and the asker goes on to run a guest. Answers one record: ``ok`` (True when
cuInit succeeded and at least one device is there), ``devices``, ``driver_cuda`` ("12.2", what the driver serves),
``error`` (CUDA's own name for a failure) and ``text``, the line a person reads ("no device (cuInit:
CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected; driver CUDA 12.2)").
"""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any

__all__ = ["check", "probe"]

LIBCUDA = "libcuda.so.1"


def _error(lib: Any, code: int) -> str:
    name, text = ctypes.c_char_p(), ctypes.c_char_p()
    lib.cuGetErrorName(code, ctypes.byref(name))
    lib.cuGetErrorString(code, ctypes.byref(text))
    return f"{(name.value or b'CUDA error').decode()}: {(text.value or b'?').decode()}" if name.value else \
        f"CUDA error {code}"


def probe(libcuda: str = LIBCUDA) -> dict[str, Any]:
    """In this process: load ``libcuda``, cuDriverGetVersion, cuInit(0), cuDeviceGetCount."""
    try:
        lib = ctypes.CDLL(libcuda)
    except OSError as exc:
        return {"ok": False, "devices": 0, "driver_cuda": "", "error": "no libcuda",
                "text": f"no driver: {libcuda} not loadable ({exc})"}
    version = ctypes.c_int(0)
    cuda = ""
    if lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value:
        cuda = f"{version.value // 1000}.{version.value % 1000 // 10}"
    driver = f"driver CUDA {cuda}" if cuda else "driver CUDA version not said"
    code = lib.cuInit(0)
    if code != 0:
        error = _error(lib, code)
        what = "no device" if "NO_DEVICE" in error else "failed"
        return {"ok": False, "devices": 0, "driver_cuda": cuda, "error": error.split(":")[0],
                "text": f"{what} (cuInit: {error}; {driver})"}
    count = ctypes.c_int(0)
    code = lib.cuDeviceGetCount(ctypes.byref(count))
    if code != 0 or count.value == 0:
        error = _error(lib, code) if code else "0 devices"
        return {"ok": False, "devices": 0, "driver_cuda": cuda, "error": error.split(":")[0],
                "text": f"no device (cuDeviceGetCount: {error}; {driver})"}
    return {"ok": True, "devices": count.value, "driver_cuda": cuda, "error": "",
            "text": f"initialised: {count.value} device{'s' if count.value > 1 else ''} ({driver})"}


def check(libcuda: str = LIBCUDA) -> dict[str, Any]:
    """:func:`probe` in a forked child (this process never initialises CUDA); its answer back through a pipe."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, and leave without running anything of the parent's (atexit, buffers)
        os.close(read)
        try:
            answer = probe(libcuda)
        except Exception as exc:  # noqa: BLE001 - any failure is the answer, never the child's traceback
            answer = {"ok": False, "devices": 0, "driver_cuda": "", "error": type(exc).__name__,
                      "text": f"failed ({type(exc).__name__}: {exc})"}
        os.write(write, json.dumps(answer).encode())
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    try:
        return dict(json.loads(b"".join(chunks)))
    except ValueError:
        return {"ok": False, "devices": 0, "driver_cuda": "", "error": "crashed",
                "text": f"failed (the check's process ended with code {os.waitstatus_to_exitcode(status)} and no "
                "answer)"}
