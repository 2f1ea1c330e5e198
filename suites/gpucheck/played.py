"""gpu-check's campaign played at a GPU's speed on any host (``make rehearse``): each check's command run with
``stand_in=<device file>`` (:mod:`suites.config.stand_in`: its training at the device file's step time as
``fixed-step``, its CAD replay at the device file's frame time per viewset as ``fixed-frame``, and ``make size`` and
``make study`` planning by an inventory that holds the device's GPU).

Two kinds of check:

- *played*: the check's own command and judge, its workloads stood in for at the device's speeds (b1, b2, b3, c3, i,
  j, l, and the commands k: make size and h: make study, planned for the device's GPU): windows, overlaps,
  comparisons' intervals, compare's verdicts, a sizing's answer and a study's report are judged as on the GPU;
- *hardware*: what only the GPU can say (NVML, CUDA's allocator at a cap, EGL, pycuda, MPS): not run, its row says
  why, its time taken as its estimate.

A played check costs its work here (at the device file's speeds) plus the harness cost the device measured for it
(``harness_s``), else this host's, on the device's clock (:mod:`suites.gpucheck.device_clock`); a hardware check its
estimate. A check the device would not start within ``budget_s`` is not started here either, and each runs within its
share, so the rehearsal fails where the device call would overrun."""

from __future__ import annotations

from dataclasses import dataclass

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.config import stand_in
from suites.config.overrides import override

__all__ = ["NOT_PLAYED", "NOT_REHEARSED", "StandIn"]

NOT_REHEARSED = "not rehearsed"
NOT_PLAYED = {  # check -> why a stand-in cannot play it
    "a": "NVML's inventory is the GPU's own",
    "c1": "a framebuffer filled to its cap is CUDA's allocator on the GPU",
    "c2": "an allocation past the cap is CUDA's out-of-memory on the GPU",
    "d": "NVML's per-process attribution is the GPU's",
    "e": "NVIDIA's EGL renders only on the GPU",
    "f": "pycuda's bandwidth and FLOP/s are the GPU's",
    "g": "MPS shares a GPU's SMs",
}


@dataclass(frozen=True)
class StandIn:
    """A device file's figures, played."""

    dev: JsonObject

    def inventory(self, here: Inventory) -> Inventory:
        """This host with the device's GPU in it (its name and memory; its driver said to be a rehearsal's)."""
        return stand_in.inventory_of(self.dev, here)

    def bench(self, overrides: list[str]) -> list[str]:
        """A check's command line (``python -m suites bench``, ``size`` or ``study``) with its workloads stood in
        for."""
        return [*overrides, override("stand_in", str(self.dev["path"]))]

    def notes(self) -> list[str]:
        """What the device file lacks that the rehearsal played another way."""
        return stand_in.notes(self.dev)
