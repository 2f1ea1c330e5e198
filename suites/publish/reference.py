"""The reference study as a bundle of its own: the vendor's published figures on 4 x Tesla M60 (their blog's two
parts), marked as published by their authors, not measured by this suite, so the catalog sets them beside measured
results. Its figures are the study planner's references (``suites/study/plan.py``: the one place they are kept),
named as a measured bundle names its ratios, '<scenario>: <phase> vs <baseline>: <figure>'.
"""

from __future__ import annotations

from typing import Any

from suites.bundle import FORMAT, VERSION
from suites.publish.document import config_sha256
from suites.run_kinds import RunKind
from suites.study import EPISODE_1, MIXED_REFERENCE, THROUGHPUT_X

__all__ = ["REFERENCE_ID", "reference_document"]

REFERENCE_ID = "reference-study"  # its run id: make catalog adds it once, whether or not its file is in DIR

SOURCE = "a hypervisor vendor's two-part blog: MNIST and CIFAR-10 on 4 x Tesla M60, then 3D CAD + MNIST on M60 vGPUs"
WORKLOAD_FIGURE = {THROUGHPUT_X: "images/s"}  # a reference's metric as a measured figure's name ends


def published(median: float | None) -> dict[str, Any]:
    return {"n": 0, "median": median, "mean": median, "low": None, "high": None, "level": 0.95,
            "method": "published"}


def reference_ratios() -> list[dict[str, Any]]:
    out = []
    for part in EPISODE_1:
        base = part.labels[0]
        for ref in part.references:
            what = f"{part.workload} {WORKLOAD_FIGURE.get(ref.metric, 'train s')}"
            out.append({"name": f"{part.scenario}: {ref.phase} vs {base}: {what}", "of": "", "to": "",
                        "higher_is_better": ref.metric == THROUGHPUT_X, "summary": published(ref.value),
                        "text": f"{ref.text} ({part.name})"})
    for profile, text in MIXED_REFERENCE.items():
        out.append({"name": f"mixed: {profile}: CAD and ML beside each other", "of": "", "to": "",
                    "higher_is_better": True, "summary": published(None), "text": text})
    return out


def reference_document() -> dict[str, Any]:
    setup = {"source": SOURCE, "gpus": "4 x Tesla M60", "profiles": ", ".join(MIXED_REFERENCE)}
    return {"format": FORMAT, "version": VERSION, "origin": "published",
            "title": "the reference study (published by its authors, not measured by this suite)",
            "run": {"id": REFERENCE_ID, "name": "reference study", "kind": RunKind.PUBLISHED, "scenario": "study",
                    "status": "published", "started": "-"},
            "published_at": "-",
            "system": {"gpu": "Tesla M60", "gpu_count": "4", "vgpu_manager_or_hypervisor": "the vendor's hypervisor "
                       "with NVIDIA GRID (M60-8Q/4Q/2Q/1Q)", "enforcement": "published (its authors' hardware)",
                       "profile": "passthrough and M60 Q profiles"},
            "suite": {"commit": "-", "modified": None, "pins_sha256": "-", "config_sha256": config_sha256(setup),
                      "libraries": {}},
            "command": "make study (this suite's reproduction of it)", "setup": setup, "figures": [],
            "ratios": reference_ratios(), "marks": {}, "answers": {}, "plots": [],
            "compliance": {"verdict": "published by its authors: not measured by this suite, not judged (no raw "
                           "repeats)", "rules": [{"rule": "published", "ok": None, "reason": SOURCE}]}}
