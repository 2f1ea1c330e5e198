"""Recorded NVML traces: record real answers on a GPU host, replay them anywhere.

A trace is a JSON file (format ``gpu_probe.nvml-trace``, version 1)::

    {"format": "gpu_probe.nvml-trace", "version": 1, "description": "...",
     "init_error": null,                      # or e.g. "LIBRARY_NOT_FOUND"
     "static": {"nvmlDeviceGetCount()": 1, "nvmlDeviceGetName(gpu0)": "NVIDIA H100 80GB HBM3", ...},
     "frames": [{"t": 0.0, "calls": {"nvmlDeviceGetUtilizationRates(gpu0)": {"gpu": 87, "memory": 41}}},
                {"t": 0.5, "calls": {"*(gpu0)": {"error": "GPU_IS_LOST"}}}]}

A call is keyed ``name(arg,...)``; handles are the strings the trace itself
returned (``gpu0``, ``gpu0/mig1``), vGPU instances are their integer ids, and
the trailing timestamp argument of the sampled APIs is left out of the key.
Answers are JSON values (objects come back with attribute access) or
``{"error": "<NVML_ERROR_ suffix>"}``. Frames apply in order from their ``t``
(seconds after ``nvmlInit``) and persist until overridden; ``*(gpu0)`` answers
every call on that handle. A call the trace does not hold answers
NOT_SUPPORTED, as an old driver would.
"""

from __future__ import annotations

import bisect
import ctypes
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace

from gpu_probe.shapes import JsonObject, NvmlValue

FORMAT = "gpu_probe.nvml-trace"
# Set on a machine (a Ray node started with it in its environment) that has no GPU of its own: the node agent
# answers NVML from this trace, and says so wherever what it saw is recorded. Never read where a trace is given.
TRACE_ENV = "GPU_PROBE_NVML_TRACE"
VERSION = 1
# Sampled APIs take "samples newer than" as their last argument; it is not part of the key.
TIMESTAMPED = {"nvmlDeviceGetProcessUtilization", "nvmlDeviceGetProcessesUtilizationInfo",
               "nvmlDeviceGetVgpuUtilization", "nvmlDeviceGetSamples"}


class TraceError(ValueError):
    """A trace file that cannot be replayed; the message is one line naming the problem."""


def call_key(name: str, args: tuple[NvmlValue, ...]) -> str:
    if name in TIMESTAMPED and args:
        args = args[:-1]
    return f"{name}({','.join(str(a) for a in args)})"


def _nvml() -> NvmlValue:
    import pynvml

    return pynvml


def _error_code(name: str) -> int:
    code = getattr(_nvml(), f"NVML_ERROR_{name}", None)
    if not isinstance(code, int):
        raise TraceError(f"unknown NVML error name {name!r} (want e.g. NOT_SUPPORTED, GPU_IS_LOST)")
    return code


def _first_arg(key: str) -> str:
    return key[key.index("(") + 1:-1].split(",")[0]


def _to_attrs(value: NvmlValue) -> NvmlValue:
    if isinstance(value, dict):
        return SimpleNamespace(**{k: _to_attrs(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_to_attrs(v) for v in value]
    return value


def _check(raw: NvmlValue, source: str) -> None:
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise TraceError(f"{source}: not an NVML trace (format must be {FORMAT!r})")
    if raw.get("version") != VERSION:
        raise TraceError(f"{source}: trace version {raw.get('version')!r} is not {VERSION}")
    if not isinstance(raw.get("static", {}), dict) or not isinstance(raw.get("frames", []), list):
        raise TraceError(f"{source}: 'static' must be an object and 'frames' a list")
    times = []
    for i, frame in enumerate(raw.get("frames", [])):
        if not isinstance(frame, dict) or not isinstance(frame.get("t"), (int, float)) \
                or not isinstance(frame.get("calls"), dict):
            raise TraceError(f"{source}: frame {i} needs a numeric 't' and a 'calls' object")
        times.append(frame["t"])
    if times != sorted(times):
        raise TraceError(f"{source}: frames are not in time order")
    books = [raw.get("static", {})] + [f["calls"] for f in raw.get("frames", [])]
    for key, answer in ((k, v) for book in books for k, v in book.items()):
        if not (isinstance(key, str) and key.endswith(")") and "(" in key):
            raise TraceError(f"{source}: bad call key {key!r} (want name(args))")
        if isinstance(answer, dict) and set(answer) == {"error"}:
            _error_code(str(answer["error"]))  # unknown names fail at load, not mid-run
    if raw.get("init_error"):
        _error_code(str(raw["init_error"]))


class ReplayNvml:
    """Answers pynvml calls from a trace; pass it to ``Nvml(lib=...)``."""

    def __init__(self, raw: JsonObject, source: str = "trace", clock: Callable[[], float] = time.monotonic) -> None:
        _check(raw, source)
        self.raw = raw
        self.NVMLError = _nvml().NVMLError
        self._clock = clock
        self._t0: float | None = None
        self._times = [f["t"] for f in raw.get("frames", [])]
        # Cumulative answers after each frame, so lookup is one dict access.
        state = dict(raw.get("static", {}))
        self._states = []
        for frame in raw.get("frames", []):
            for wildcard in (k for k in frame["calls"] if k.startswith("*(")):
                handle = wildcard[2:-1]  # a later "*(gpu0)" overrides every earlier gpu0 answer
                state = {k: v for k, v in state.items() if _first_arg(k) != handle}
            state = {**state, **frame["calls"]}
            self._states.append(state)
        self._static = dict(raw.get("static", {}))

    @classmethod
    def load(cls, path: str | Path, clock: Callable[[], float] = time.monotonic) -> "ReplayNvml":
        try:
            raw = json.loads(Path(path).read_text())
        except OSError as exc:
            raise TraceError(f"{path}: cannot read trace ({exc.strerror})") from exc
        except ValueError as exc:
            raise TraceError(f"{path}: not valid JSON ({exc})") from exc
        return cls(raw, str(path), clock)

    def __getattr__(self, name: str) -> NvmlValue:
        if name.startswith("NVML_"):  # enum constants come from the real binding
            return getattr(_nvml(), name)
        if not name.startswith("nvml"):
            raise AttributeError(name)
        return lambda *args: self._answer(name, args)

    def _state(self) -> JsonObject:
        if self._t0 is None or not self._states:
            return self._static
        k = bisect.bisect_right(self._times, self._clock() - self._t0) - 1
        return self._states[k] if k >= 0 else self._static

    def _answer(self, name: str, args: tuple[NvmlValue, ...]) -> NvmlValue:
        if name == "nvmlInit":
            if self.raw.get("init_error"):
                raise self.NVMLError(_error_code(self.raw["init_error"]))
            self._t0 = self._clock()
            return None
        if name == "nvmlShutdown":
            return None
        state = self._state()
        key = call_key(name, args)
        handle = str(args[0]) if args else None
        answer = state.get(key, state.get(f"*({handle})") if handle else None)
        if answer is None:
            raise self.NVMLError(_error_code("NOT_SUPPORTED"))
        if isinstance(answer, dict) and set(answer) == {"error"}:
            raise self.NVMLError(_error_code(answer["error"]))
        return _to_attrs(answer)


def lib_from_env(environ: Mapping[str, str] | None = None) -> tuple[NvmlValue, str]:
    """(the NVML library to use here, the trace it replays or ""): ``$GPU_PROBE_NVML_TRACE``'s trace where set,
    else None (the real driver)."""
    path = (os.environ if environ is None else environ).get(TRACE_ENV, "")
    return (ReplayNvml.load(path), path) if path else (None, "")


# --- recording ------------------------------------------------------------------

def _plain(value: NvmlValue) -> NvmlValue:
    """pynvml answers (ctypes structs, unions, bytes, lists) -> JSON values."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, SimpleNamespace):
        return {k: _plain(v) for k, v in vars(value).items()}
    if isinstance(value, (ctypes.Structure, ctypes.Union)):
        return {name: _plain(getattr(value, name)) for name, *_ in value._fields_
                if not isinstance(getattr(value, name), ctypes._Pointer)}
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


class RecordingNvml:
    """Wraps the real pynvml, answering as it does while writing every answer down."""

    def __init__(self, lib: NvmlValue | None = None, description: str = "") -> None:
        self._lib = lib if lib is not None else _nvml()
        self.NVMLError = self._lib.NVMLError
        self._handles: dict[int, str] = {}  # id(handle object) -> token
        self._objects: dict[str, NvmlValue] = {}
        self.static: JsonObject = {}
        self.frames: list[JsonObject] = []
        self.description = description
        self.init_error: str | None = None
        self._t0 = time.monotonic()

    def new_frame(self) -> None:
        """Later answers go to a frame stamped with the time since recording began."""
        self.frames.append({"t": round(time.monotonic() - self._t0, 4), "calls": {}})

    def __getattr__(self, name: str) -> NvmlValue:
        target = getattr(self._lib, name)
        if not name.startswith("nvml"):
            return target
        return lambda *args: self._call(name, target, args)

    def _token(self, obj: NvmlValue, name: str, args: tuple[NvmlValue, ...]) -> str:
        if name == "nvmlDeviceGetHandleByIndex":
            token = f"gpu{args[0]}"
        else:  # a MIG device handle, named after its parent and slot
            token = f"{self._tokens_of(args)[0]}/mig{args[1]}"
        self._objects[token] = obj
        return token

    def _tokens_of(self, args: tuple[NvmlValue, ...]) -> list[NvmlValue]:
        return [next((t for t, o in self._objects.items() if o is a), a) for a in args]

    def _call(self, name: str, target: NvmlValue, args: tuple[NvmlValue, ...]) -> NvmlValue:
        real_args = tuple(self._objects.get(a, a) if isinstance(a, str) else a for a in args)
        key = call_key(name, tuple(self._tokens_of(args)))
        book = self.frames[-1]["calls"] if self.frames else self.static
        try:
            value = target(*real_args)
        except self._lib.NVMLError as exc:
            code = exc.value
            names = [n[len("NVML_ERROR_"):] for n in dir(self._lib)
                     if n.startswith("NVML_ERROR_") and getattr(self._lib, n) == code]
            if name == "nvmlInit":
                self.init_error = names[0] if names else "UNKNOWN"
            book[key] = {"error": names[0] if names else "UNKNOWN"}
            raise
        if name in ("nvmlDeviceGetHandleByIndex", "nvmlDeviceGetMigDeviceHandleByIndex"):
            token = self._token(value, name, args)
            self.static[key] = token
            return token
        if name not in ("nvmlInit", "nvmlShutdown"):
            book[key] = _plain(value)
        return value

    def to_dict(self) -> JsonObject:
        return {"format": FORMAT, "version": VERSION, "description": self.description,
                "init_error": self.init_error, "static": self.static, "frames": self.frames}
