"""A composition played at a GPU's speed on any host (``stand_in=<device file>``, what ``make rehearse`` gives every
command it runs): each training guest as ``fixed-step`` at the device file's step time over as many images, each CAD
replay as ``fixed-frame`` at its frame time per viewset, and the planners of ``make size`` and ``make study`` given
an inventory that holds the device's GPU. What the host itself cannot be (a GPU, an MPS daemon) is not faked: the
guests run not enforced, ``sharing=mps`` is played as time-slicing (said in each guest's note), and every run records
``stand_in``, so nothing it measures passes for a GPU's figure.

A guest without a GPU (a comparison's CPU arm) trains at the reference study's CPU-to-GPU ratio (10.06x): the device
file holds no CPU's step."""

from __future__ import annotations

import dataclasses
from typing import Any

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites.config import device_file
from suites.config.schema import BenchConfig
from suites.workloads.base import TrainConfig, WorkloadConfig
from suites.workloads.fixed_step import FixedStepConfig
from suites.workloads.graphics.fixed_frame import FixedFrameConfig
from suites.workloads.graphics.replay import GraphicsReplayConfig

__all__ = ["IMAGES", "MPS_NOTE", "SLOW_ARM", "inventory_for", "inventory_of", "notes", "play", "played_note",
           "step_of"]

SLOW_ARM = 10.0  # a CPU guest's step: the reference study's GPU-vs-CPU ratio (10.06x)
IMAGES = {"mnist-torch": 60_000, "cifar10-torch": 50_000}  # an epoch of each workload a device file times
MPS_NOTE = "stand_in: sharing=mps played as time-slicing (no GPU here: no MPS daemon to start)"
TRAIN_KEPT = {f.name for f in dataclasses.fields(TrainConfig)} - {"name", "framework", "target_accuracy"}
REPLAY_KEPT = {f.name for f in dataclasses.fields(GraphicsReplayConfig)} - {"name", "framework", "verify"}


def step_of(dev: JsonObject, workload: str, batch: int, how: str) -> float:
    """The device's step time of ``workload`` at ``batch`` run ``how``; another batch's at equal throughput; the
    other way of running it where this one was not measured (said by :func:`notes`); else a ConfigError naming what
    the file lacks."""
    known = device_file.steps(dev)
    for same_way in (True, False):
        for name, b, way, ms in known:
            if name == workload and (way == how or not same_way):
                return ms * batch / b
    return device_file.step_ms(dev, workload, batch, how)  # raises


def notes(dev: JsonObject) -> list[str]:
    """What the device file lacks that a stand-in plays another way."""
    ways = {(name, way) for name, _, way, _ in device_file.steps(dev)}
    return [f"{w}: no eager step time measured on {dev['gpu']}: played at its compiled step"
            for w in IMAGES if (w, device_file.EAGER) not in ways and any(k[0] == w for k in ways)]


def inventory_of(dev: JsonObject, here: Inventory) -> Inventory:
    """This host with the device's GPU in it (its name and memory; its driver said to be a rehearsal's)."""
    gpu = {"index": 0, "name": dev["gpu"], "uuid": "GPU-rehearsal", "mem_total_MiB": dev["mem_total_MiB"],
           "mig_mode": "disabled", "virtualization_mode": "none"}
    return Inventory(here.hostname, here.os, here.python, here.cpu_model, here.cpu_logical, here.cpu_physical,
                     here.cpus_usable, here.mem_total_MiB, gpus=[gpu], driver_version="rehearsal",
                     gpu_status=f"rehearsal at {dev['gpu']} speed", git_sha=here.git_sha)


def played_note(given: str) -> str:
    """What every guest of a stand-in run says (its placement note): not a measurement of anything."""
    return (f"stand_in={given}: workloads played at that device file's speeds by fixed-step / fixed-frame stand-ins "
            "(make rehearse): not a measurement")


def inventory_for(cfg: BenchConfig, here: Inventory) -> Inventory:
    """What a command plans by: this host, or (``stand_in``) this host with the device file's GPU in it."""
    return inventory_of(device_file.load(cfg.stand_in), here) if cfg.stand_in else here


def play(workload: WorkloadConfig, dev: JsonObject, on_gpu: bool, images: int | None) -> WorkloadConfig:
    """``workload`` at the device's speed: a training the device file times as fixed-step (its batch, epochs and
    window; ``images`` an epoch, else its train_limit or the data set's size), a CAD replay as fixed-frame (its
    viewsets, size and replay length); any other workload as it is."""
    if isinstance(workload, GraphicsReplayConfig) and not isinstance(workload, FixedFrameConfig):
        played: Any = FixedFrameConfig(**{k: getattr(workload, k) for k in REPLAY_KEPT},
                                       frame_ms={vs: float(ms) for vs, ms in dev["frame_ms"].items()})
    elif isinstance(workload, TrainConfig) and workload.name in IMAGES:
        how = device_file.how_of(vars(workload))  # as make gpu-check keyed the step it measured
        step = step_of(dev, workload.name, workload.batch_size, how) * (1.0 if on_gpu else SLOW_ARM)
        played = FixedStepConfig(**{k: getattr(workload, k) for k in TRAIN_KEPT}, step_ms=round(step, 4),
                                 images=workload.train_limit or images or IMAGES[workload.name])
        # sized as the run it stands for: the recipe's epochs where that run is (an accuracy run), so a device with
        # steps 3x as long trains 3x as long; a stand-in has no accuracy target, which would make it a 2 s window
        played.size_by = workload.sized_by()
    else:
        return workload
    played.check()
    return played
