"""What a run records, reduced to key sets: results.json paths and MLflow params/metrics/tags/artifacts per run role.

``tests/golden/record_keys.json`` was written by ``python -m tests.support.record_keys
write`` on the code *before* the layered redesign; ``tests/e2e/test_record_keys.py``
checks that every key listed there is still recorded (new keys may appear).
Host and library params (``host.*``, ``lib.*``) depend on the machine, not on
the suite, and are left out.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from .helpers import REPO, SMOKE, BenchRun, run_bench

GOLDEN = REPO / "tests" / "golden" / "record_keys.json"
# Seconds-long versions of the three things a user records: one scenario, a comparison, the mixed study.
SCENARIOS: dict[str, list[str]] = {
    "single": [*SMOKE],
    "comparison": [*SMOKE, "scenario=gpu-vs-cpu"],
    "mixed": ["progress=quiet", "scenario=mixed", "profile=m60-8q", "profile.memory_MiB=2048", "scenario.repeats=1",
              "scenario.mixed.cad.overrides=['workload.frames_per_test=4','workload.viewsets=[product]']",
              "scenario.mixed.ml.overrides=['workload.train_limit=1024','workload.width=4','workload.max_steps=12',"
              "'workload.batch_size=64','workload.warmup_steps=2','workload.min_timed_steps=10','workload.min_timed_s=0']"],
}
MACHINE = ("host.", "lib.")


def json_paths(obj: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON document; list items collapse to ``[]``."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for k, v in obj.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            out.add(path)
            out |= json_paths(v, path)
    elif isinstance(obj, list):
        for v in obj:
            out |= json_paths(v, f"{prefix}[]")
    return out


def mlflow_keys(uri: str) -> dict[str, dict[str, list[str]]]:
    """Per run kind (role, plus the phase's last label part): the union of its params, metrics, tags, artifacts."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("gpu-mixed-bench")
    out: dict[str, dict[str, set[str]]] = {}
    for run in client.search_runs([exp.experiment_id], max_results=1000):
        tags = run.data.tags
        kind = tags.get("bench.role", "?")
        if kind == "guest":
            kind += f":{run.data.params.get('workload', '?')}"
        keys = out.setdefault(kind, {"params": set(), "metrics": set(), "tags": set(), "artifacts": set()})
        keys["params"] |= {k for k in run.data.params if not k.startswith(MACHINE)}
        keys["metrics"] |= set(run.data.metrics)
        keys["tags"] |= set(tags)
        keys["artifacts"] |= artifacts(client, run.info.run_id)
    return {k: {part: sorted(v) for part, v in parts.items()} for k, parts in out.items()}


def artifacts(client: Any, run_id: str, path: str | None = None) -> set[str]:
    names: set[str] = set()
    for f in client.list_artifacts(run_id, path):
        names |= artifacts(client, run_id, f.path) if f.is_dir else {f.path}
    return names


def capture(name: str, tmp: Path) -> dict[str, Any]:
    """Run one scenario into a private store; its key sets."""
    run = run_bench(tmp, *SCENARIOS[name])
    if run.proc.returncode != 0:
        raise RuntimeError(f"{name}: exit {run.proc.returncode}: {run.proc.stderr[-2000:]}")
    return keys_of(run)


def keys_of(run: BenchRun) -> dict[str, Any]:
    """A finished run's key sets: every results.json path under its run dir, its store's MLflow keys per role."""
    results: set[str] = set()
    for path in run.run_dir.rglob("results.json"):
        results |= json_paths(json.loads(path.read_text()))
    return {"results.json": sorted(results), "mlflow": mlflow_keys(run.tracking_uri)}


def assert_keeps(golden: dict, now: dict) -> None:
    """Every key of ``golden`` (one scenario's key sets) is in ``now``."""
    assert sorted(set(golden["results.json"]) - set(now["results.json"])) == [], "results.json lost keys"
    for role, parts in golden["mlflow"].items():
        assert role in now["mlflow"], f"no {role} run recorded"
        for part, keys in parts.items():
            lost = sorted(set(keys) - set(now["mlflow"][role][part]))
            assert lost == [], f"{role} run lost {part}: {lost}"


def main(argv: list[str]) -> int:
    if argv != ["write"]:
        print("usage: python -m tests.support.record_keys write", file=sys.stderr)
        return 2
    golden = {}
    for name in SCENARIOS:
        with tempfile.TemporaryDirectory() as tmp:
            golden[name] = capture(name, Path(tmp))
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
