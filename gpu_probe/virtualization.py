"""What kind of GPU this is from a sharing point of view: MIG, vGPU host, passthrough.

All calls go through :meth:`Nvml.query`, so a driver without vGPU support (the
usual case) simply yields NA and the vGPU/MIG parts are skipped.
"""

from __future__ import annotations

from gpu_probe import vocab
from gpu_probe.nvml import NA, Nvml
from gpu_probe.shapes import JsonObject, NvmlValue

VIRTUALIZATION_MODES = {0: "none", 1: "passthrough", 2: "vgpu-guest", 3: "vgpu-host", 4: "vsga-host"}
SCHEDULER_POLICIES = {0: "unknown", 1: "best-effort", 2: "equal-share", 3: "fixed-share"}


def virtualization_mode(nv: Nvml, h: NvmlValue) -> NvmlValue:
    mode = nv.query(lambda lib: lib.nvmlDeviceGetVirtualizationMode(h))
    return NA if mode is NA else VIRTUALIZATION_MODES.get(int(mode), f"mode-{mode}")


def mig_info(nv: Nvml, h: NvmlValue) -> JsonObject:
    """MIG mode and, when enabled, each MIG device (name, UUID, memory, instance ids)."""
    mode = nv.query(lambda lib: lib.nvmlDeviceGetMigMode(h))
    if mode is NA:
        return {"mig_mode": NA, "mig_devices": []}
    current = int(mode[0])
    out: JsonObject = {"mig_mode": "enabled" if current else "disabled", "mig_devices": []}
    if not current:
        return out
    count = nv.query(lambda lib: lib.nvmlDeviceGetMaxMigDeviceCount(h))
    for i in range(0 if count is NA else int(count)):
        m = nv.query(lambda lib, i=i: lib.nvmlDeviceGetMigDeviceHandleByIndex(h, i))
        if m is NA:  # slots without a MIG device answer NOT_FOUND
            continue
        mem = nv.query(lambda lib, m=m: lib.nvmlDeviceGetMemoryInfo(m))
        out["mig_devices"].append({
            "index": i,
            "name": nv.query(lambda lib, m=m: lib.nvmlDeviceGetName(m)),
            "uuid": nv.query(lambda lib, m=m: lib.nvmlDeviceGetUUID(m)),
            "gpu_instance_id": nv.query(lambda lib, m=m: lib.nvmlDeviceGetGpuInstanceId(m)),
            "compute_instance_id": nv.query(lambda lib, m=m: lib.nvmlDeviceGetComputeInstanceId(m)),
            vocab.GPU_MEM_TOTAL.key: NA if mem is NA else mem.total / vocab.MiB,
        })
    return out


def scheduler_policy(nv: Nvml, h: NvmlValue) -> NvmlValue:
    """The vGPU scheduler's policy (best-effort, equal-share, fixed-share) where NVML says it: on the vGPU host.
    Inside a vGPU guest NVML answers NOT_SUPPORTED (the scheduler is the hypervisor's): NA."""
    state = nv.query(lambda lib: lib.nvmlDeviceGetVgpuSchedulerState(h))
    return NA if state is NA else SCHEDULER_POLICIES.get(int(state.schedulerPolicy), str(state.schedulerPolicy))


def vgpu_host_info(nv: Nvml, h: NvmlValue) -> JsonObject:
    """On a vGPU host: scheduler policy and every active vGPU with its type's limits."""
    policy = scheduler_policy(nv, h)
    instances = nv.query(lambda lib: lib.nvmlDeviceGetActiveVgpus(h))
    vgpus = []
    for inst in [] if instances is NA else instances:
        inst = int(inst)
        vtype = nv.query(lambda lib, inst=inst: lib.nvmlVgpuInstanceGetType(inst))
        fb = nv.query(lambda lib, t=vtype: lib.nvmlVgpuTypeGetFramebufferSize(t))
        used = nv.query(lambda lib, inst=inst: lib.nvmlVgpuInstanceGetFbUsage(inst))
        vm = nv.query(lambda lib, inst=inst: lib.nvmlVgpuInstanceGetVmID(inst))
        vgpus.append({
            "instance": inst,
            "type_name": nv.query(lambda lib, t=vtype: lib.nvmlVgpuTypeGetName(t)),
            "type_framebuffer_MiB": NA if fb is NA else fb / vocab.MiB,
            "type_max_instances": nv.query(lambda lib, t=vtype: lib.nvmlVgpuTypeGetMaxInstances(h, t)),
            "fb_used_MiB": NA if used is NA else used / vocab.MiB,
            "uuid": nv.query(lambda lib, inst=inst: lib.nvmlVgpuInstanceGetUUID(inst)),
            "vm_id": NA if vm is NA else vm[0],
        })
    return {"vgpu_scheduler": policy, "vgpus": vgpus}


def describe(nv: Nvml, index: int) -> JsonObject:
    """Sharing-related facts about one GPU, for the inventory."""
    h = nv.handle(index)
    mode = virtualization_mode(nv, h)
    out: JsonObject = {"virtualization_mode": mode, **mig_info(nv, h)}
    if mode == "vgpu-host":
        out.update(vgpu_host_info(nv, h))
    elif mode == "vgpu-guest":  # asked all the same: a sizing on a fleet records what the VM could see of it
        out["vgpu_scheduler"] = scheduler_policy(nv, h)
    return out


class VgpuUtilization:
    """Per-vGPU SM utilisation from NVML's timestamped samples (vGPU hosts only)."""

    def __init__(self, nv: Nvml) -> None:
        self.nv = nv
        self._last_ts: dict[int, int] = {}

    def read(self, index: int) -> dict[str, float]:
        h = self.nv.handle(index)
        since = self._last_ts.get(index, 0)
        samples = self.nv.query(lambda lib: lib.nvmlDeviceGetVgpuUtilization(h, since))
        out: dict[str, float] = {}
        for s in [] if samples is NA else samples:
            self._last_ts[index] = max(self._last_ts.get(index, 0), int(s.timeStamp))
            out[f"vgpu{int(s.vgpuInstance)}.{vocab.GPU_UTIL.key}"] = float(_value(s.smUtil))
        used = self.nv.query(lambda lib: lib.nvmlDeviceGetActiveVgpus(h))
        for inst in [] if used is NA else used:
            fb = self.nv.query(lambda lib, i=int(inst): lib.nvmlVgpuInstanceGetFbUsage(i))
            if fb is not NA:
                out[f"vgpu{int(inst)}.{vocab.GPU_MEM_USED.key}"] = fb / vocab.MiB
        return out


def _value(v: NvmlValue) -> NvmlValue:
    """NVML's sample value is a C union; utilisation lives in its unsigned-int member."""
    return getattr(v, "uiVal", v)
