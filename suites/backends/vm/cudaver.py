"""Which CUDA a VM image's NVIDIA driver serves, and which CUDA the guest's frameworks were built for: an image
whose driver cannot serve them is refused before anything is built.

NVIDIA's rule (CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions"): an application built
with CUDA M.m runs on a driver whose own CUDA version (``cuDriverGetVersion``) has the same major M or a later one;
within a major, a driver of an older minor runs it by minor-version compatibility (PTX of the newer minor cannot be
JIT-compiled there: said, not refused). A driver's CUDA is read from its ``libcuda`` without loading it (the library
embeds its PTX compiler's banner, "Cuda compilation tools, release 12.2"); NVIDIA's table of branches is the
fallback. A framework's CUDA is read from its installed files without importing it (torch's ``version.py``,
TensorFlow's ``build_info.py``): a CPU build needs none.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from suites.errors import ConfigError

__all__ = ["BRANCHES", "branch_cuda", "check", "driver_cuda", "guest_needs", "min_branch", "minor_note", "mismatch"]

# (first driver branch, the CUDA version it serves), newest first
BRANCHES = ((590, "13.1"), (580, "13.0"), (575, "12.9"), (570, "12.8"), (565, "12.7"), (560, "12.6"),
            (555, "12.5"), (550, "12.4"), (545, "12.3"), (535, "12.2"), (530, "12.1"), (525, "12.0"),
            (520, "11.8"), (515, "11.7"), (510, "11.6"), (495, "11.5"), (470, "11.4"), (465, "11.3"),
            (460, "11.2"), (455, "11.1"), (450, "11.0"))
BANNER = re.compile(rb"Cuda compilation tools, release (\d+)\.(\d+)")
TORCH_CUDA = re.compile(r"^cuda\b[^=\n]*=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", re.M)
TF_CUDA = re.compile(r"'cuda_version',\s*'([\d.]+)'")


def major_minor(version: str) -> tuple[int, int]:
    parts = [int(p) for p in re.findall(r"\d+", version)[:2]] + [0]
    return parts[0], parts[1]


def branch_cuda(driver_version: str) -> str:
    """The CUDA version NVIDIA's table gives driver ``driver_version``'s branch ('' below the table)."""
    branch = major_minor(driver_version)[0]
    return next((cuda for first, cuda in BRANCHES if branch >= first), "")


def min_branch(cuda: str) -> int:
    """The first driver branch that serves CUDA ``cuda``'s major (13.0 -> 580, 12.4 -> 525)."""
    major = major_minor(cuda)[0]
    return min((first for first, c in BRANCHES if major_minor(c)[0] >= major), default=BRANCHES[0][0])


def driver_cuda(libcuda: Path | None, driver_version: str) -> tuple[str, str]:
    """(the CUDA version the driver serves, where that was read): from ``libcuda``'s bytes, else NVIDIA's table."""
    if libcuda is not None and libcuda.is_file():
        m = BANNER.search(libcuda.read_bytes())
        if m:
            return f"{int(m.group(1))}.{int(m.group(2))}", f"read from {libcuda.name}"
    return branch_cuda(driver_version), f"NVIDIA's table for the {major_minor(driver_version)[0]} branch"


def guest_needs() -> dict[str, str]:
    """{framework: the CUDA version it was built for} of this Python's torch and TensorFlow (the guest's: a VM runs
    the host's venv in its view); a CPU build or an absent framework is not listed."""
    needs = {}
    for name, relative, pattern in (("torch", "version.py", TORCH_CUDA),
                                    ("tensorflow", "python/platform/build_info.py", TF_CUDA)):
        spec = importlib.util.find_spec(name)  # finds the package without running its __init__
        if spec is None or not spec.submodule_search_locations:
            continue
        try:
            text = (Path(next(iter(spec.submodule_search_locations))) / relative).read_text()
        except OSError:
            continue
        m = pattern.search(text)
        cuda = next((g for g in (m.groups() if m else ()) if g), "")
        if cuda:
            needs[name] = ".".join(cuda.split(".")[:2])
    return needs


def mismatch(driver_version: str, cuda: str, needs: dict[str, str], hint: str) -> str:
    """Why the driver cannot serve the guest's CUDA ('' when it can): names both versions and, after ``hint``'s
    '=', what to supply."""
    short = [(name, need) for name, need in needs.items() if cuda and major_minor(cuda)[0] < major_minor(need)[0]]
    if not cuda:
        short = list(needs.items()) if needs else []
    if not short:
        return ""
    name, need = max(short, key=lambda item: major_minor(item[1]))
    first = min_branch(need)
    return (f"driver {driver_version} supports CUDA {cuda or '(unknown)'}; this {name} needs CUDA {need} "
            f"(driver >= {first}): pass {hint}=<NVIDIA-Linux-x86_64-{first} or newer .run>")


def minor_note(cuda: str, needs: dict[str, str]) -> str:
    """What minor-version compatibility leaves out, where a framework's CUDA minor is newer than the driver's."""
    newer = [f"{name} (CUDA {need})" for name, need in needs.items()
             if cuda and major_minor(need)[0] == major_minor(cuda)[0] and major_minor(need) > major_minor(cuda)]
    return (f"{', '.join(newer)} on a CUDA {cuda} driver by minor-version compatibility (PTX built for the newer "
            "minor is not JIT-compiled)") if newer else ""


def check(driver_version: str, cuda: str, needs: dict[str, str], hint: str) -> None:
    """One ConfigError when the driver cannot serve the guest's CUDA."""
    why = mismatch(driver_version, cuda, needs, hint)
    if why:
        raise ConfigError(why)
