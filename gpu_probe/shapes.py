"""The shapes of the plain JSON the suite passes around, named once: a guest's JSON-line event, a results.json
section, a data spec, a node's report, NVML's answers gathered into a dict, MLflow params. What they hold is JSON
(numbers may be NaN, which Python's json writes and reads); a row of samples holds numbers only."""

from __future__ import annotations

from typing import Any, TypeAlias, Union

__all__ = ["Json", "JsonObject", "NvmlValue", "Row"]

Json: TypeAlias = Union[None, bool, int, float, str, list["Json"], dict[str, "Json"]]
JsonObject: TypeAlias = dict[str, Json]  # one JSON object
Row: TypeAlias = dict[str, float]  # one sample: a vocabulary key (gpu_probe.vocab) -> its value in the key's unit
# pynvml, a recording of it, or what its calls take and return (a device handle, a ctypes struct, a number, bytes):
# pynvml declares no types, so neither can its callers
NvmlValue: TypeAlias = Any
