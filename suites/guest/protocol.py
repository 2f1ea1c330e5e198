"""The guest protocol: JSON lines over a pipe, so a guest need not be local.

Host -> guest (guest's stdin): one line with the :class:`GuestSpec`, then
``go`` when every guest has reached the start barrier (``abort`` cancels); ``stop`` to an open-ended guest
(``workload.until_stopped``) once the guests beside it have finished.
Guest -> host (guest's stdout): one JSON object per line with an ``event``:
``ready`` (set-up done, waiting at the barrier), ``progress`` (done/total
steps), ``result`` (a :class:`GuestResult`) or ``error`` (one-line reason).
Nothing here is local-only: a remote agent (ssh, Ray actor) can carry the
same lines, with ``vcpus`` and ``gpus`` naming that host's resources.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from gpu_probe.shapes import JsonObject

PROTOCOL_VERSION = 1
GO = "go"
ABORT = "abort"
STOP = "stop"  # to an open-ended guest (workload.until_stopped) once every guest beside it has finished


@dataclass
class GuestSpec:
    guest_id: str
    profile: str
    workload: str
    workload_config: JsonObject
    data: JsonObject
    vcpus: list[int]  # host CPU ids for the guest's affinity
    gpus: list[str]  # CUDA_VISIBLE_DEVICES entries (GPU UUIDs or indices); empty: no GPU
    framebuffer_MiB: int | None
    memory_MiB: int
    seed: int = 0
    repeats: int = 1  # train this many times (fresh weights each), report the olympic mean
    profile_gpus: int = 0  # GPUs the profile asks for (CPU ranks stand in for them on a host without GPUs)
    env: dict[str, str] = field(default_factory=dict)  # extra environment, e.g. CUDA MPS limits
    # The longest a data-parallel rank may wait on its peers (NCCL/gloo's collective timeout): past the run's own
    # limits (start barrier + run), so a peer waiting while another guest compiles is never killed by the watchdog.
    peer_timeout_s: float = 3960.0
    # The runner's secret for this guest: every event carrying a figure must carry it back (:func:`signed`), so a
    # line printed on stdout before the guest took it over (a sitecustomize, a library's import) is never a result.
    nonce: str = ""
    # The sizing the first repeat of this guest's phase calibrated (its info's suites.workloads.timing
    # CALIBRATION_KEYS): a later repeat trains the same steps without calibrating again; empty: calibrate
    calibration: JsonObject = field(default_factory=dict)
    protocol: int = PROTOCOL_VERSION

    def to_line(self) -> str:
        return json.dumps(asdict(self)) + "\n"

    @classmethod
    def from_line(cls, line: str) -> "GuestSpec":
        raw = json.loads(line)
        if raw.get("protocol") != PROTOCOL_VERSION:
            raise ValueError(f"guest protocol {raw.get('protocol')} != {PROTOCOL_VERSION}")
        return cls(**raw)


@dataclass
class GuestResult:
    guest_id: str
    status: str  # ok | failed | interrupted
    error: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    info: JsonObject = field(default_factory=dict)
    t_train_start: float | None = None  # epoch seconds, for overlap checks across guests
    t_train_end: float | None = None
    pid: int | None = None
    affinity: list[int] = field(default_factory=list)
    repeats: list[dict[str, float]] = field(default_factory=list)  # each repeat's own metrics
    windows: list[tuple[float, float]] = field(default_factory=list)  # each repeat's timed window, epoch s

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_dict(self) -> JsonObject:
        return asdict(self)


def event(name: str, **payload: Any) -> str:
    return json.dumps({"event": name, **payload}) + "\n"


def signed(line: str, nonce: str) -> str:
    """An event line carrying the spec's nonce (what :func:`from_the_guest` checks)."""
    return json.dumps({**json.loads(line), "nonce": nonce}) + "\n" if nonce else line


def from_the_guest(ev: JsonObject, nonce: str) -> bool:
    """Whether the runner takes ``ev``: it carries the guest's nonce, or it is an error (one a guest sends before
    it could read its spec; a forged one fails the guest, it never makes a figure)."""
    return not nonce or ev.get("nonce") == nonce or ev.get("event") == "error"


def parse_event(line: str) -> JsonObject | None:
    """A protocol event, or None for a line that is not one (never raises)."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) and "event" in obj else None
