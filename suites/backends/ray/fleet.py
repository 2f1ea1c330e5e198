"""``ray.placement=per-node``: each guest one whole Ray node, a VM whose hypervisor gave it the profile.

A site's vSphere / AHV / OpenStack VMs join a Ray cluster; each reports what its
GPU *is* through gpu_probe on it (:func:`suites.backends.ray.agent.node_report`).
A guest of profile P goes only to a node whose GPU is P: a ``GRID M60-8Q`` vGPU
for m60-8q, a passthrough GPU of the profile's model for a passthrough profile,
a MIG device of the profile's size for a MIG-backed one. The hypervisor enforces
the profile there, so such a guest is ``enforced`` and says what was seen. Pure:
node reports in, placements or one PlacementError out.
"""

from __future__ import annotations

import re
from collections import Counter

from gpu_probe import vocab
from gpu_probe.shapes import JsonObject
from suites.backends.placement import Placement
from suites.config.profiles import GpuAccess, ProfileConfig, family, type_matches
from suites.errors import PlacementError
from suites.validity import ENFORCED

PASSTHROUGH_MODES = ("passthrough", "none")  # a VM's passed-through GPU, or a bare-metal node's own


def gpu_label(gpu: JsonObject) -> str:
    """What one GPU is, in a line: ``GRID M60-8Q``, ``Tesla M60 (passthrough)``, ``... MIG 3g.20gb``."""
    name, mode = str(gpu.get("name") or "unnamed GPU"), gpu.get("virtualization_mode")
    migs = [str(m.get("name")) for m in gpu.get("mig_devices") or []]
    if migs:
        return ", ".join(sorted(set(migs)))
    return name if mode == "vgpu-guest" else f"{name} ({mode or 'mode unknown'})"


def offer(node: JsonObject) -> str:
    """What a node offers, e.g. ``GRID M60-4Q`` or ``no GPU``."""
    gpus = node.get("gpus") or []
    if not gpus:
        return vocab.NO_GPU
    labels = Counter(gpu_label(g) for g in gpus)
    return " + ".join(f"{n} x {lab}" if n > 1 else lab for lab, n in labels.items())


def mig_size(profile: ProfileConfig) -> str:
    """A MIG-backed profile's device size as NVML names it: ``3g.20gb``."""
    return f"{profile.mig_slices}g.{round((profile.framebuffer_MiB or 0) / 1024)}gb"


def seen(profile: ProfileConfig, node: JsonObject) -> str:
    """What on this node is the profile (the text its validity cites), or "" when nothing is."""
    gpus = node.get("gpus") or []
    if profile.gpu_access is GpuAccess.cpu:
        return "no GPU asked for"
    if profile.gpu_access is GpuAccess.vgpu:
        for g in gpus:
            if g.get("virtualization_mode") == "vgpu-guest" and type_matches(profile.name, str(g.get("name", ""))):
                return f"hypervisor: {g['name']} seen in the VM"
        if profile.scheduler == "mig":
            for g in gpus:
                for m in g.get("mig_devices") or []:
                    if same_family(profile, str(m.get("name", ""))) and re.search(
                            rf"\b{re.escape(mig_size(profile))}\b", str(m.get("name", ""))):
                        return f"MIG device {m['name']} seen on the node"
        return ""
    whole = [g for g in gpus if g.get("virtualization_mode") in PASSTHROUGH_MODES and not g.get("mig_devices")
             and same_family(profile, str(g.get("name", "")))]
    if len(whole) < profile.gpus:
        return ""
    how = "passed through to the VM" if whole[0].get("virtualization_mode") == "passthrough" else "bare metal"
    return f"{len(whole)} x {whole[0].get('name')} {how}"


def same_family(profile: ProfileConfig, gpu_name: str) -> bool:
    """The GPU is of the profile's model family (any GPU where the profile names none): 'NVIDIA A100-SXM4-40GB MIG
    3g.20gb' is an A100."""
    return not profile.gpu_model or family(profile.gpu_model) == family(gpu_name)


def wanted(profile: ProfileConfig) -> str:
    """What a node must have for ``profile``, as the refusal says it."""
    if profile.gpu_access is GpuAccess.cpu:
        return "any node"
    if profile.gpu_access is GpuAccess.passthrough:
        model = profile.gpu_model or "GPU"
        return f"{profile.gpus} x {model} passed through" if profile.gpus > 1 else f"a {model} passed through"
    if profile.scheduler == "mig":
        return f"a {profile.name.upper()} vGPU or a MIG {mig_size(profile)} device"
    brand = "GRID" if profile.name.lower().endswith("q") else "NVIDIA"
    bare = re.sub(r"^([a-z0-9]+)-[0-9]+-(?=[0-9]+[a-z]$)", r"\1-", profile.name)  # a100-40-10c: A100-10C
    return f"a {brand} {bare.upper()}"


def labels(nodes: list[JsonObject]) -> dict[str, str]:
    """node id -> the name a person knows it by: its hostname, with its address where two share one."""
    hosts = Counter(n.get("host") for n in nodes)
    return {n["node_id"]: n["host"] if hosts[n.get("host")] == 1 else f"{n['host']}@{n.get('ip', '?')}"
            for n in nodes}


def refusal(profile: ProfileConfig, n: int, nodes: list[JsonObject], fitting: list[str]) -> str:
    """``profile m60-8q needs 2 nodes with a GRID M60-8Q; the cluster has 1 (vm-a), and 1 with GRID M60-4Q (vm-b)``"""
    name = labels(nodes)
    others: dict[str, list[str]] = {}
    for node in nodes:
        if node["node_id"] not in fitting:
            others.setdefault(offer(node), []).append(name[node["node_id"]])
    have = f"{len(fitting)}" + (f" ({', '.join(name[i] for i in fitting)})" if fitting else "")
    rest = "".join(f", and {len(ids)} with {what} ({', '.join(ids)})" for what, ids in others.items())
    return (f"profile {profile.name} needs {n} node(s) with {wanted(profile)} (ray.placement=per-node: one guest "
            f"per node); the cluster has {have}{rest}")


def place_per_node(profile: ProfileConfig, n: int, nodes: list[JsonObject],
                   gpu_groups: dict[str, list[str]] | None = None) -> list[Placement]:
    """One guest per node whose GPU is the profile, in the cluster's node order, or one PlacementError; with
    ``gpu_groups`` each placement also says which guests shared its physical GPU (as stated)."""
    what_of = {nd["node_id"]: seen(profile, nd) for nd in nodes}
    fitting = [node_id for node_id, what in what_of.items() if what]
    if len(fitting) < n:
        raise PlacementError(refusal(profile, n, nodes, fitting))
    by_id = {nd["node_id"]: nd for nd in nodes}
    name = labels(nodes)
    out = []
    for i, node_id in enumerate(fitting[:n]):
        node, what = by_id[node_id], what_of[node_id]
        if node.get("nvml_trace"):  # a stand-in node: what it "saw" is a recording, and the record says so
            what += f"; NVML replayed from {node['nvml_trace']}"
        res = {"CPU": 0.0, "GPU": float(node.get("ray_gpus", 0.0))}  # the whole node; its own figures recorded
        out.append(Placement(f"g{i}", [], [], [], shortfall(profile, node), resources=res, node=name[node_id],
                             node_id=node_id, validity=ENFORCED, reason=what))
    state_sharing(out, [by_id[p.node_id] for p in out], gpu_groups or {})
    return out


def group_of(node: JsonObject, gpu_groups: dict[str, list[str]]) -> str:
    """The stated group a node is in (named by hostname, address or host@address), "" where none."""
    names = {str(node.get("host")), str(node.get("ip")), f"{node.get('host')}@{node.get('ip')}"}
    found = [g for g, members in gpu_groups.items() if names & {str(m) for m in members}]
    if len(found) > 1:
        raise PlacementError(f"ray.gpu_groups: node {node.get('host')} ({node.get('ip')}) is in {len(found)} groups "
                             f"({', '.join(found)}); a vGPU is a slice of one physical GPU")
    return found[0] if found else ""


def state_sharing(placements: list[Placement], nodes: list[JsonObject], gpu_groups: dict[str, list[str]]) -> None:
    """Each placement's note says which other guests' VMs share its physical GPU, as ``ray.gpu_groups`` states it
    (inside a vGPU VM NVML shows the vGPU, never the physical GPU under it)."""
    groups = [group_of(nd, gpu_groups) for nd in nodes]
    for p, group in zip(placements, groups, strict=True):
        if not group:
            continue
        others = [f"{q.guest_id} ({q.node})" for q, g in zip(placements, groups, strict=True)
                  if g == group and q is not p]
        said = (f"shares physical GPU {group} with {', '.join(others)}" if others
                else f"on physical GPU {group}, no other guest of this run on it")
        p.note = "; ".join(x for x in (p.note, f"{said} (stated in ray.gpu_groups, not seen)") if x)


def shortfall(profile: ProfileConfig, node: JsonObject) -> str:
    """A VM smaller than the profile is used as it is; the note says by how much."""
    parts = []
    cpus, mem = len(node.get("cpus") or []), float(node.get("mem_MiB") or 0)
    if cpus < profile.vcpus:
        parts.append(f"{cpus} vCPU(s), profile {profile.name} asks {profile.vcpus}")
    if mem and mem < profile.memory_MiB:
        parts.append(f"{mem:.0f} MiB memory, profile asks {profile.memory_MiB}")
    return f"node has {'; '.join(parts)}: its own figures recorded" if parts else ""
