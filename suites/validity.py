"""What a measurement is worth, in the words every table, figure, record and verdict uses: one place for them.

A guest's validity is decided from its placement (suites/backends/placement.py) and corrected by what the guest
itself reports (a CPU fallback, a software renderer, CUDA that did not start in a VM); a run, a comparison or a
sizing is worth its weakest measurement.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["EMULATED", "EMULATED_MPS", "ENFORCED", "NOT_ENFORCED", "TCG_EMULATION", "VALIDITY", "base_of",
           "first_reason", "is_emulated", "is_not_enforced", "labelled", "weakest"]

ENFORCED = "enforced"  # the profile's own GPU model (or no GPU asked for): the profile as specified
EMULATED = "emulated"  # another NVIDIA GPU: framebuffer cap + time-slicing, no vGPU scheduler or MIG
# another NVIDIA GPU, each guest's SM share and device memory enforced by the driver (sharing=mps)
EMULATED_MPS = "emulated (MPS-enforced)"
NOT_ENFORCED = "not enforced"  # no GPU: a CPU stand-in; GPU figures and GPU ratios mean nothing
VALIDITY = (NOT_ENFORCED, EMULATED, EMULATED_MPS, ENFORCED)  # weakest first
# Why a run is 'not enforced' when it is not the usual reason (no GPU): its guests were VMs whose CPU QEMU emulated
# (backend=vm without KVM). A placement's ``reason``, said with the validity wherever it is shown or recorded.
TCG_EMULATION = "TCG emulation: not a performance measurement"


def first_reason(reasons: Iterable[str]) -> str:
    """The reason of several measurements (they share one where any has one: a run's VMs share an accelerator)."""
    return next((r for r in reasons if r), "")


def labelled(validity: str, reason: str) -> str:
    """``not enforced (TCG emulation: ...)``: the validity with its reason, where it has one."""
    return f"{validity} ({reason})" if reason else validity


def weakest(validities: list[str]) -> str:
    """A run is worth what its weakest measurement is worth (nothing measured: not enforced)."""
    return min(validities, key=VALIDITY.index) if validities else NOT_ENFORCED


def base_of(validity: str) -> str:
    """A validity as one of VALIDITY, its label dropped (``not enforced (host busy)``: not enforced); text that is
    none of them (a file's) is worth nothing: not enforced."""
    return max((v for v in VALIDITY if validity == v or validity.startswith(v + " ")), key=len, default=NOT_ENFORCED)


def is_emulated(validity: str) -> bool:
    """Emulated on another GPU, time-sliced or under MPS (a labelled validity included)."""
    return validity.startswith(EMULATED)


def is_not_enforced(validity: str) -> bool:
    """No GPU (or a CPU stand-in), a labelled validity included: ``not enforced (host busy)``."""
    return validity.startswith(NOT_ENFORCED)
