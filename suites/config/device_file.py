"""A GPU's device file (``configs/device/<gpu>.json``): what ``make gpu-check`` measured on it, as the figures
``make rehearse`` plays that GPU at. Written only from a measurement, each file says where its figures came from
(``source``); a GPU never measured has no file.

- ``step_ms``: each training run's step time, keyed ``<workload>/<batch>/<how it ran>`` where how is ``eager`` or
  ``compile=<mode>`` (a compiled step with CUDA graphs and an eager one are different figures: keyed apart, neither
  overwrites the other);
- ``frame_ms``: each viewset's frame time, from its own frame rate (never a composite);
- ``cuda_context_MiB``: the CUDA context a guest measured; ``mem_total_MiB``: the GPU's memory;
- ``work_s``: GPU seconds per ``<workload>/<tier>`` (what the study's planner reads);
- ``check_s``, ``harness_s``: each gpu-check check's seconds on that GPU, and of them its work (timed windows) and
  the harness's (the rest): what gpu-check plans by and ``make rehearse`` charges (suites/gpucheck/device_clock.py).

A file is data: one that is not a JSON object with those figures in range is one ``error:`` line, never a
traceback (:func:`load`).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpu_probe.inventory import Inventory
from gpu_probe.shapes import JsonObject
from suites import json_rules
from suites.config.schema import CONFIG_DIR
from suites.errors import ConfigError

__all__ = ["DEVICES", "EAGER", "load", "measured", "of_gpu", "step_key", "step_ms", "steps"]

DEVICES = CONFIG_DIR / "device"
EAGER = "eager"
MAX_FILE_BYTES = 1 << 20  # a device file is a few hundred bytes: a bigger one is not one


def step_key(workload: str, batch: int, workload_config: Mapping[str, Any]) -> str:
    """``mnist-torch/512/eager``, ``cifar10-torch/1024/compile=reduce-overhead``: a step time says how it ran."""
    return f"{workload}/{batch}/{how_of(workload_config)}"


def how_of(workload_config: Mapping[str, Any]) -> str:
    """How a training run steps: ``eager``, or ``compile=<mode>`` under torch.compile."""
    return f"compile={workload_config.get('compile_mode', 'default')}" if workload_config.get("compile") else EAGER


def steps(dev: JsonObject) -> list[tuple[str, int, str, float]]:
    """Each step time of ``dev`` as (workload, batch, how it ran, ms), in the file's order; a key that is not
    ``<workload>/<batch>/<how>`` is left out (:func:`problems` refuses a file that has one)."""
    out = []
    for key, value in dev.get("step_ms", {}).items():
        parts = str(key).split("/")
        if len(parts) == 3 and parts[1].isdigit() and int(parts[1]) > 0:
            out.append((parts[0], int(parts[1]), parts[2], float(value)))
    return out


def step_ms(dev: JsonObject, workload: str, batch: int, how: str = EAGER) -> float:
    """The device's step time of ``workload`` at ``batch`` run ``how``; a ConfigError naming what the file lacks."""
    key = f"{workload}/{batch}/{how}"
    value = dev["step_ms"].get(key)
    if value is None:
        raise ConfigError(f"device file {dev.get('path', '?')}: no step_ms[{key!r}] (it has "
                          f"{', '.join(dev['step_ms']) or 'none'}; make gpu-check writes it from b1-b3)")
    return float(value)


def path_of(gpu: str) -> Path:
    return Path(gpu) if gpu.endswith(".json") else DEVICES / f"{gpu.lower()}.json"


def load(gpu: str) -> JsonObject:
    """The device file of ``gpu`` (a name under configs/device, or a path to a file), checked; a ConfigError (one
    line) where there is none or it is not a device file."""
    path = path_of(gpu)
    known = ", ".join(sorted(p.stem for p in DEVICES.glob("*.json"))) or "none"
    if path.is_symlink() or not path.is_file():
        why = ("a link (a device file is a plain file)" if path.is_symlink() else
               "not a plain file (a folder, a FIFO or a device: a device file is a plain file)" if path.exists()
               else "no such file")
        raise ConfigError(f"GPU={gpu}: {path}: {why} (known: {known}; make gpu-check writes one on each GPU it "
                          "measures)")
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"{path.stat().st_size:,} bytes")
        dev = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"GPU={gpu}: {path} is not a device file ({type(exc).__name__}: {exc})"[:300]) from None
    problems = problems_of(dev)
    if problems:
        raise ConfigError(f"GPU={gpu}: {path} is not a device file: {'; '.join(problems)}"[:400])
    return {**dev, "path": str(path)}


def of_gpu(name: str) -> JsonObject | None:
    """The shipped device file whose ``gpu`` is this NVML name ('NVIDIA H200': configs/device/h200.json), None where
    no file is that GPU's (or none is a device file)."""
    for path in sorted(DEVICES.glob("*.json")):
        try:
            dev = load(str(path))
        except ConfigError:
            continue
        if dev["gpu"] == name:
            return dev
    return None


def problems_of(dev: object) -> list[str]:
    """What keeps ``dev`` from being a device file (none: it is one): its schema (suites/schemas/device.json,
    one line per rule it fails), then what a schema cannot say (a CUDA context within the GPU's memory)."""
    out = json_rules.problems("device", dev)
    if not out and isinstance(dev, dict) and dev["cuda_context_MiB"] > dev["mem_total_MiB"]:
        out.append(f"cuda_context_MiB must be MiB above 0 and within the GPU's memory, got {dev['cuda_context_MiB']!r}"
                   f" of {dev['mem_total_MiB']!r}")
    if not out and isinstance(dev, dict) and len(steps(dev)) != len(dev.get("step_ms", {})):
        out.append("step_ms's keys must be <workload>/<batch>/<eager or compile=mode>")
    return out


def measured(inv: Inventory, results: dict[str, JsonObject], timings: dict[str, float]) -> JsonObject | None:
    """What ``make gpu-check`` measured, as a device file (None without a GPU): the GPU and its memory, each
    training run's step time at its batch and compile mode, the CUDA context a guest measured, each viewset's frame
    time, the GPU seconds per workload and tier."""
    if not inv.gpus:
        return None
    steps: dict[str, float] = {}
    frames: dict[str, float] = {}
    context = math.nan
    for res in results.values():
        for g in res.get("guests", []):
            m, info, spec = g["result"].get("metrics", {}), g["result"].get("info", {}), g["spec"]
            rate, batch = m.get("images_per_sec", math.nan), spec["workload_config"].get("batch_size")
            if rate == rate and rate > 0 and batch:
                steps[step_key(spec["workload"], batch, spec["workload_config"])] = round(1000.0 * batch / rate, 3)
            context = info.get("cuda_context_MiB", context) if context != context else context
            for vs in info.get("viewsets", []) if spec["workload"] == "graphics-replay" else []:
                fps = m.get(f"{vs}.fps", math.nan)
                if fps == fps and fps > 0:
                    frames[vs] = round(1000.0 / fps, 3)
    gpu = inv.gpus[0]
    return {"gpu": gpu.get("name"), "mem_total_MiB": gpu.get("mem_total_MiB"),
            "cuda_context_MiB": context if context == context else None,
            "source": f"make gpu-check on {gpu.get('name')}, driver {inv.driver_version}",
            "step_ms": steps, "frame_ms": frames, "work_s": dict(timings)}


def name_for(gpu: str) -> str:
    """The file name (no .json) a GPU's device file is written under: its model, the first word of its NVML name
    with a digit in it, lower case ('NVIDIA H100 80GB HBM3': h100, 'NVIDIA A100-SXM4-80GB': a100-sxm4-80gb)."""
    words = [w for w in re.split(r"\s+", gpu) if any(ch.isdigit() for ch in w)]
    return re.sub(r"[^a-z0-9-]", "", (words[0] if words else gpu).lower()) or "gpu"


def first_of(made: JsonObject) -> Path | None:
    """Where ``made`` (what gpu-check measured) was written as its GPU's first device file under configs/device, None
    where the GPU has one already (a file is replaced by a person, never by a run) or ``made`` is not one."""
    gpu = str(made.get("gpu") or "")
    path = DEVICES / f"{name_for(gpu)}.json"
    if not gpu or of_gpu(gpu) is not None or path.exists() or problems_of(made):
        return None
    # written beside it, then linked in: the file appears whole or not at all, and a link never replaces a file
    # another gpu-check wrote meanwhile (a rename would)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(made, indent=2) + "\n")
        os.link(tmp, path)
    except FileExistsError:
        return None
    finally:
        tmp.unlink(missing_ok=True)
    return path
