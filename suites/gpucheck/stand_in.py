"""gpu-check's campaign played at a GPU's speed on any host (``make rehearse``): what each check's command runs,
with its training at the device file's step time (``fixed-step``) and its CAD replay at the device file's frame time
per viewset (``fixed-frame``), on a host inventory that has that GPU.

Three kinds of check:

- *played*: the check's own command and judge, its workloads stood in for at the device's speeds (b1, b2, b3, c3, i,
  j, l): windows, overlaps, comparisons' intervals, compare's verdicts are judged as on the GPU;
- *hardware*: what only the GPU can say (NVML, CUDA's allocator at a cap, EGL, pycuda, MPS): not run, its row says
  why, its time taken as its estimate;
- *commands on this host's speed* (k: make size, h: make study): their sub-runs are planned by this host's own
  inventory, so they cannot be played at the device's speed: not rehearsed, said, their estimate taken.

Every check costs its estimate on the device's clock (the device file's measured ``check_s`` or gpu-check's table),
whatever it took here: a check the device would not start within ``budget_s`` is not started here either, so the
rehearsal fails where the device call would overrun."""

from __future__ import annotations

from dataclasses import dataclass, fields

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.config.overrides import override
from suites.gpucheck import device_file
from suites.workloads.fixed_step import FixedStepConfig

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
    "k": "make size plans its consolidations by this host's own inventory (no GPU here): not the device's",
    "h": "make study plans its parts by this host's own inventory (no GPU here): not the device's",
}
SLOW_ARM = 10.0  # a comparison's CPU arm: the reference study's GPU-vs-CPU ratio (10.06x)
IMAGES = {"mnist-torch": 60_000, "cifar10-torch": 50_000}  # an epoch of each, where the command does not say
KEPT = {f.name for f in fields(FixedStepConfig)}  # the training keys fixed-step has


@dataclass(frozen=True)
class StandIn:
    """A device file's figures, played."""

    dev: JsonObject

    def inventory(self, here: Inventory) -> Inventory:
        """This host with the device's GPU in it (its name and memory; its driver said to be a rehearsal's)."""
        gpu = {"index": 0, "name": self.dev["gpu"], "uuid": "GPU-rehearsal", "mem_total_MiB": self.dev["mem_total_MiB"],
               "mig_mode": "disabled", "virtualization_mode": "none"}
        return Inventory(here.hostname, here.os, here.python, here.cpu_model, here.cpu_logical, here.cpu_physical,
                         here.cpus_usable, here.mem_total_MiB, gpus=[gpu], driver_version="rehearsal",
                         gpu_status=f"rehearsal at {self.dev['gpu']} speed", git_sha=here.git_sha)

    def step(self, workload: str, batch: int, how: str) -> float:
        """The device's step time of ``workload`` at ``batch`` run ``how``; another batch's at equal throughput;
        the other way of running it where this one was not measured (said by :meth:`notes`)."""
        known = device_file.steps(self.dev)
        for same_way in (True, False):
            for name, b, kind, ms in known:
                if name == workload and (kind == how or not same_way):
                    return ms * batch / b
        return device_file.step_ms(self.dev, workload, batch, how)  # raises, naming what the file lacks

    def training(self, workload: str, given: dict[str, str]) -> list[str]:
        """A training run of ``workload`` (its command's ``workload.*`` and ``data.*`` values ``given``) as fixed-step
        at the device's step time, over as many images."""
        batch = int(given.get("workload.batch_size", 512 if workload == "mnist-torch" else 1024))
        how = f"compile={given.get('workload.compile_mode', 'default')}" \
            if given.get("workload.compile") == "true" else device_file.EAGER
        images = int(given.get("data.synthetic_train") or given.get("workload.train_limit") or IMAGES[workload])
        kept = [f"{k}={v}" for k, v in given.items() if k.startswith("workload.") and k.split(".", 1)[1] in KEPT
                and k not in ("workload.batch_size", "workload.target_accuracy")]
        return ["workload=fixed-step", f"workload.step_ms={self.step(workload, batch, how):.4g}",
                f"workload.batch_size={batch}", f"workload.images={images}", *kept]

    def cad(self) -> list[str]:
        """A CAD guest's overrides: fixed-frame at each viewset's frame time."""
        return [override(f"workload.frame_ms.{vs}", float(ms), "+") for vs, ms in self.dev["frame_ms"].items()]

    def bench(self, overrides: list[str]) -> list[str]:
        """A check's ``python -m suites bench`` overrides with its workloads stood in for."""
        given = dict(o.split("=", 1) for o in overrides if "=" in o)
        workload, scenario = given.get("workload", ""), given.get("scenario", "single")
        rest = [o for o in overrides if not o.startswith(("workload", "data.synthetic=", "data.root="))]
        if scenario == "mixed":
            ml = self.training("mnist-torch", {"workload.batch_size": "128", "workload.train_limit": "12000"})
            return [*rest, "scenario.mixed.ml.workload=fixed-step",
                    override("scenario.mixed.ml.overrides", [*ml[1:], "workload.until_stopped=true"]),
                    "scenario.mixed.cad.workload=fixed-frame", override("scenario.mixed.cad.overrides", self.cad())]
        if workload == "graphics-replay":
            return [*rest, "workload=fixed-frame", *self.cad()]
        if workload not in IMAGES:
            return overrides
        played = self.training(workload, given)
        if scenario == "gpu-vs-cpu":  # the CPU arm at the reference study's ratio: a comparison of equal work
            step = float(played[1].split("=", 1)[1])
            phases = (f"scenario.phases=[{{label:1-gpu,overrides:['workload.step_ms={step:.4g}']}},"
                      f"{{label:cpu,overrides:['workload.step_ms={step * SLOW_ARM:.4g}']}}]")
            return [*[o for o in rest if not o.startswith("scenario=")], "scenario=gpu-vs-cpu", *played, phases,
                    "scenario.baseline=1-gpu"]
        return [*rest, *played]

    def notes(self) -> list[str]:
        """What the device file lacks that the rehearsal played another way."""
        kinds = {(name, kind) for name, _, kind, _ in device_file.steps(self.dev)}
        return [f"{w}: no eager step time measured on {self.dev['gpu']}: played at its compiled step"
                for w in IMAGES if (w, device_file.EAGER) not in kinds and any(k[0] == w for k in kinds)]
