"""The answer as what an administrator provisions: the VM (profile, vCPUs, RAM), GPUs and hosts, where the ML users
run and why, the licence edition the profile needs, the cost per user, and what would change the answer (the
binding resource and the next threshold). Pure: from the solver's :class:`Sized` and the profile's figures."""

from __future__ import annotations

import math
import re

from suites.capacity.solver import GPU_TIME, Candidate, Mix, Sized, span

__all__ = ["edition", "lines"]

# NVIDIA vGPU software editions by the vGPU type's series letter (NVIDIA's licensing guide)
EDITIONS = {"q": "NVIDIA RTX Virtual Workstation (vWS)", "b": "NVIDIA Virtual PC (vPC) or vWS",
            "a": "NVIDIA Virtual Applications (vApps)", "c": "NVIDIA AI Enterprise (C-series: compute)"}


def edition(profile: str) -> str:
    """The licence edition a profile needs, from its series letter (``m60-2q``: Q, vWS); a MIG slice is a C-series
    type of NVIDIA AI Enterprise (no vWS type: graphics users need a Q profile on another GPU)."""
    series = re.search(r"([a-z])$", profile)
    name = EDITIONS.get(series.group(1) if series else "", "no vGPU edition (not a vGPU type)")
    return name + ("; a MIG slice: no graphics (vWS) type on it" if "-mig-" in profile else "")


def placement(s: Sized, c: Candidate, mix: Mix) -> str:
    if not mix.ml:
        return "no ML users"
    if s.ml_shared:
        return (f"the {mix.ml} ML user(s) beside the CAD users, one per GPU (the shape the curve measured: each "
                f"GPU's {s.per_gpu[1]}..{s.per_gpu[0]} CAD guest(s) were measured beside one ML guest)")
    return (f"the {mix.ml} ML user(s) on GPUs of their own ({c.profile}: {c.per_gpu} VM(s) per GPU leaves no slot "
            "beside a CAD user)")


def change(s: Sized, mix: Mix, spare: int) -> str:
    """The binding resource at the safe end (the point end where safe has no count) and the next threshold."""
    end = 1 if s.gpus[1] is not None else 0
    binds, per_gpu, gpus = s.binding[end], s.per_gpu[end], s.gpus[end]
    if gpus is None or per_gpu <= 0:
        return f"what would change it: {binds} allows no CAD guest per GPU"
    fill = (gpus - spare - (mix.ml if not s.ml_shared else 0)) * per_gpu
    ends = f"{'safe' if end else 'point'} ends at "  # the curve's reason line: '...; point ends at ...; safe ...'
    why = next((part for r in s.reasons if r.startswith(f"{GPU_TIME}:") for part in r.split("; ")
                if part.startswith(ends)), "") if binds == GPU_TIME else ""
    return (f"what would change it: {binds} binds ({per_gpu} CAD guest(s) per GPU{': ' + why if why else ''}); "
            f"{gpus} GPU(s) hold {fill} CAD user(s): user {fill + 1} needs GPU {gpus + 1}")


def lines(s: Sized, c: Candidate, mix: Mix, spare: int, gpus_per_host: int) -> list[str]:
    """The provisioning lines of one sized candidate (the recommended one, in the answer)."""
    gpus, hosts = span(s.gpus), span(s.hosts)
    cost = f"; cost per user {span(s.cost, '{:,.0f}')}" if s.cost[0] is not None else ""
    vram = f"a {c.framebuffer_MiB:,} MiB vGPU" if c.framebuffer_MiB else "a whole GPU"
    per_host = math.ceil(gpus_per_host * max(s.per_gpu[0], 1))
    return [f"provision: {c.profile} VMs of {c.vcpus} vCPU(s), {c.memory_MiB:,} MiB RAM and {vram} each "
            f"(up to {per_host} CAD VM(s) a host); {gpus} GPU(s) in {hosts} host(s) of {gpus_per_host} GPU(s)"
            f"{' (' + str(spare) + ' spare)' if spare else ''}{cost}",
            f"ML users: {placement(s, c, mix)}",
            f"licence: {edition(c.profile)}, one per concurrent CAD user",
            change(s, mix, spare)]
