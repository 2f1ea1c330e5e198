"""The shapes of the plain JSON the suite passes around, named once: a guest's JSON-line event, a results.json
section, a data spec, a node's report, NVML's answers gathered into a dict, MLflow params. What they hold is JSON
(numbers may be NaN, which Python's json writes and reads); a row of samples holds numbers only."""

from __future__ import annotations

from typing import TypeAlias, Union

__all__ = ["Json", "JsonObject", "Row"]

Json: TypeAlias = Union[None, bool, int, float, str, list["Json"], dict[str, "Json"]]
JsonObject: TypeAlias = dict[str, Json]  # one JSON object
Row: TypeAlias = dict[str, float]  # one sample: a vocabulary key (gpu_probe.vocab) -> its value in the key's unit
