"""Guests sampled somewhere else: readings handed in by whoever polls a remote guest, and rows a sampler on the
guest's own node took, brought onto this clock and joined to this sampler's rows (``backend=ray``)."""

from __future__ import annotations

import bisect
import math

from gpu_probe import vocab
from gpu_probe.shapes import JsonObject

NAN = float("nan")  # a guest reading that does not exist (gone, not yet measured)


class RemoteUsage:
    """A guest's CPU % and RSS measured where it runs (a Ray node) and handed in by whoever polls it.

    ``pids`` stay empty unless the guest shares this host's process namespace,
    so NVML's per-process figures are never matched against foreign pids.
    """

    def __init__(self) -> None:
        self._reading: tuple[float, float, set[int]] = (NAN, NAN, set())
        self.rows: list[JsonObject] = []  # what a sampler on the guest's node took, ``t`` on this clock
        self.node: JsonObject = {}  # that sampler's own figures: cpu_pct, rate_hz, errors, gpu_status, trace

    def add_rows(self, rows: list[JsonObject], offset_s: float) -> None:
        """Rows stamped on the node's clock (epoch ``t``), brought onto this one: the node's offset taken off."""
        self.rows += [{**r, "t": r["t"] - offset_s} for r in rows]

    def update(self, cpu_pct: float, rss_MiB: float, local_pids: set[int]) -> None:
        self._reading = (cpu_pct, rss_MiB, set(local_pids))

    def gone(self) -> None:
        self._reading = (NAN, NAN, set())

    def refresh(self, children_of: dict[int, list[int]]) -> None:
        pass  # the remote side follows the process tree itself

    def read(self, since: float | None = None) -> tuple[float, float, set[int]]:
        """The node's latest reading (``since`` is ProcessTree's; a node's own sampler times its reading)."""
        return self._reading


def merge_rows(rows: list[JsonObject], t0: float, remote: list[JsonObject],
               within_s: float) -> list[JsonObject]:
    """``rows`` (``t_s`` after ``t0``) each with the columns of the ``remote`` row (epoch ``t``, this clock)
    nearest in time, where one is within ``within_s``; new dicts, the inputs untouched."""
    remote = sorted(remote, key=lambda r: r["t"])
    times = [r["t"] for r in remote]
    out = []
    for row in rows:
        t = t0 + row["t_s"]
        k = bisect.bisect_left(times, t)
        near = min((j for j in (k - 1, k) if 0 <= j < len(times)), key=lambda j: abs(times[j] - t), default=None)
        if near is None or abs(times[near] - t) > within_s:
            out.append(dict(row))
            continue
        out.append({**row, **{c: v for c, v in remote[near].items() if c != "t"}})
    return out


def node_columns(row: JsonObject, guest_id: str) -> JsonObject:
    """A node's (or a VM's) sampler row as the runner's columns for its one guest: the node's GPUs under the guest
    (``g0.gpu0.util_pct``), the guest's own GPU figures as they are (``g0.gpu_mem_MiB``); ``t`` its epoch time."""
    out: JsonObject = {}
    for key, value in row.items():
        if key.startswith("gpu"):
            out[f"{guest_id}.{key}"] = value
        elif key.startswith(f"{guest_id}.gpu_"):
            out[key] = value
    return out


def node_notes(guest_id: str, src: RemoteUsage) -> list[str]:
    """What a remote guest's GPU series are and are not: sampled on its node (or inside its VM), by a trace,
    without power."""
    node = src.node
    where = node.get("where", "on its node")
    out = [f"{guest_id}: GPU series sampled {where} at {node.get('rate_hz', 0):.1f} Hz, "
           f"{len(src.rows)} rows, node sampler {node.get('cpu_pct', 0):.2f} % of a core ({node.get('gpu_status')})"]
    if node.get("trace"):
        out.append(f"{guest_id}: the NVML answers {where} were replayed from {node['trace']} (not a GPU)")
    power = [r[k] for r in src.rows for k in r if k.endswith(vocab.POWER.key)]
    gpu_rows = any(isinstance(v, float) and not math.isnan(v)  # none where NVML answered nothing there
                   for r in src.rows for k, v in r.items() if k != "t")
    if gpu_rows and not any(isinstance(v, float) and not math.isnan(v) for v in power):
        out.append(f"{guest_id}: its GPU ({where}) does not expose power (a vGPU guest's NVML does not): no power or "
                   "energy for it")
    return out
