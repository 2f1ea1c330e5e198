"""A site's fleet (``backend=ray ray.placement=per-node``) as a sizing's candidates.

Each node is one VM whose hypervisor gave it a profile (suites/backends/ray/fleet.py), and each guest takes a node of
its own, so a consolidation count of N CAD guests beside the ML guest needs N + 1 nodes of the profile: a curve goes
no further than the fleet's nodes of its profile allow, and the sizing says where it stopped and why. The GPU sized
for is the physical one the nodes' vGPUs slice. What the nodes said of themselves (profile, driver, the vGPU
scheduler where their NVML shows it, an NVML recording standing in for a GPU) is the sizing's provenance. Pure:
node reports in, a plan out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gpu_probe.shapes import JsonObject
from suites.backends.ray.fleet import group_of, labels, offer, seen
from suites.config.profiles import ProfileConfig

__all__ = ["FleetPlan", "plan", "replayed"]

NOT_EXPOSED = "not exposed in the VM (NVML there does not report the hypervisor's scheduler)"


@dataclass
class FleetPlan:
    counts: dict[str, int]  # profile -> the most CAD guests a count can place (its nodes less the ML guest's)
    notes: list[str] = field(default_factory=list)
    provenance: dict[str, str] = field(default_factory=dict)


def replayed(reports: list[JsonObject]) -> list[str]:
    """The nodes whose NVML answers were a recording (a stand-in for a GPU), by name."""
    name = labels(reports)
    return [name[r["node_id"]] for r in reports if r.get("nvml_trace")]


def scheduler(reports: list[JsonObject]) -> str:
    """What the nodes' NVML said of the vGPU scheduler: one policy, several, or why none."""
    said = Counter(str(g.get("vgpu_scheduler")) for r in reports for g in r.get("gpus") or []
                   if g.get("virtualization_mode") in ("vgpu-guest", "vgpu-host") and g.get("vgpu_scheduler"))
    return ", ".join(f"{p} ({n} node(s))" for p, n in said.items()) if said else NOT_EXPOSED


def provenance(reports: list[JsonObject], gpu_groups: dict[str, list[str]]) -> dict[str, str]:
    name = labels(reports)

    def node(r: JsonObject) -> str:
        group = group_of(r, gpu_groups)
        return f"{name[r['node_id']]}: {offer(r)}" + (f" (physical GPU {group}, stated)" if group else "")

    nodes = ", ".join(node(r) for r in reports)
    drivers = sorted({str(r.get("driver")) for r in reports if r.get("driver")})
    traces = sorted({str(r["nvml_trace"]) for r in reports if r.get("nvml_trace")})
    out = {"fleet": f"{len(reports)} node(s): {nodes}", "GPU": " + ".join(sorted({offer(r) for r in reports})),
           "driver": ", ".join(drivers) or "-", "mode": "vGPU: each guest a node (VM) its hypervisor gave the profile",
           "vGPU scheduler": scheduler(reports),
           "GPU groups": "; ".join(f"{g}: {', '.join(map(str, m))}" for g, m in gpu_groups.items()) or
           "not stated (ray.gpu_groups): a count's VMs are counted as sharing one GPU, wherever the hypervisor put "
           "them"}
    if traces:
        out["NVML"] = (f"replayed from recorded traces on {len(replayed(reports))} node(s) ({', '.join(traces)}): "
                       "no GPU measured")
    return out


def plan(candidates: list[ProfileConfig], reports: list[JsonObject], gpu_groups: dict[str, list[str]],
         max_guests: int) -> FleetPlan:
    """Each candidate's deepest count on this fleet (absent: it cannot place one), the lines saying why."""
    name = labels(reports)
    out = FleetPlan({}, provenance=provenance(reports, gpu_groups))
    for p in candidates:
        nodes = [name[r["node_id"]] for r in reports if seen(p, r)]
        deepest = min(max_guests, len(nodes) - 1)
        if deepest >= 1:
            out.counts[p.name] = deepest
            if deepest < max_guests:
                out.notes.append(f"{p.name}: measured to {deepest} CAD guest(s) per GPU: the fleet has {len(nodes)} "
                                 f"node(s) of it ({', '.join(nodes)}), one guest each, the ML guest's included")
        elif nodes:
            out.notes.append(f"{p.name}: not measured: the fleet has 1 node of it ({nodes[0]}); a count needs 2 (a CAD "
                             "guest and the ML guest, one node each)")
        else:
            out.notes.append(f"{p.name}: not measured: no node of the fleet is one")
    return out
