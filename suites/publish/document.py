"""A run as a bundle's document: the system it ran on, the suite and command that ran it, every figure with its raw
repeats, n, 95 % interval, window, validity and marks, each phase's figure over its baseline's (a ratio with its
interval), a sizing's answers. Nothing local leaves with it: a value that names a path on this machine, a store's
URI or a host name is left out (said in the document's ``setup``), credentials never reach it (``redact``).

The summaries are computed here from the raw repeats, and :mod:`suites.publish.rules` computes them again from the
bundle's own raw repeats: a figure edited by hand does not recompute.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from gpu_probe.stats import Interval, confidence_interval, paired_ratios, ratio_interval, unpaired_ratio_interval
from suites import store_keys as keys
from suites.bundle import FORMAT, LEFT_OUT, VERSION
from suites.compare import MAKESPAN, NOT_SETUP, OLD_NAMES, RunFigures
from suites.errors import redact
from suites.validity import NOT_ENFORCED, weakest

__all__ = ["LEFT_OUT", "config_sha256", "document", "public_setup", "ratio_summary", "summary"]

REPO = Path(__file__).resolve().parents[2]
LOCAL = re.compile(r"(^|[\s='\"(,;:])(/|~/|\.\.?/)[\w.~-]|://|^sqlite:|^file:|[A-Za-z]:\\")
PATH_IN_TEXT = re.compile(r"(^|[\s='\"(,;])(?:/|~/|\.\.?/)[^\s,;)'\"]+")  # not a URL's //
HIDDEN = ("host.hostname", keys.RUN_DIR, "hydra.", "data.root", "vm.image_dir", "vm.sysfs", "ray.address")
# What each figure's repeats were measured over, by its unit: the window a reader needs to set it beside another's
WINDOWS = {"images/s": "each repeat's timed steps after warm-up (the guests' timed window), summed over guests",
           "s": "each repeat's seconds (train s: warm-up included; makespan: start barrier to last result)",
           "frames/s": "each repeat's replayed frames after warm-up (the replay's timed window), summed over guests",
           "ms": "each repeat's frame times, its worst guest's 95th percentile"}


def summary(values: list[float]) -> dict[str, Any]:
    """n, median, mean and the 95 % interval of the mean (Student's t from 3 repeats, a bootstrap at 2, none at
    1): ``gpu_probe.stats.confidence_interval``, the suite's one way."""
    iv = confidence_interval(values)
    return summary_of(iv, iv.method)


PAIRED, UNPAIRED = "paired", "ratio"  # a ratio's interval method, as its summary's "method" names it


def ratio_summary(of: list[float], to: list[float], method: str = PAIRED) -> dict[str, Any]:
    """``of`` over ``to``, as the comparison that measured them printed it (one figure, one number: terminal,
    comparison.csv, MLflow, bundle and catalog): repeat i of a phase over repeat i of its baseline, their median and
    the interval of their logs (``paired_ratios``, ``ratio_interval``: run/comparison.py's ``normalise``). A bundle
    written before (method "ratio") holds the unpaired interval of the medians' ratio, and is recomputed so."""
    if method == UNPAIRED:
        return summary_of(unpaired_ratio_interval(to, of), UNPAIRED)  # its B / A: of / to
    return summary_of(ratio_interval(paired_ratios(of, to)), PAIRED)


def summary_of(iv: Interval, method: str) -> dict[str, Any]:
    """An interval as a bundle's summary holds it (schema.json's ``summary``)."""
    return {"n": iv.n, "median": iv.median, "mean": iv.mean, "low": iv.low, "high": iv.high, "level": iv.level,
            "method": method}


def document(rf: RunFigures, command: str, plots: list[str], scenario: str) -> dict[str, Any]:
    """The bundle document of the run ``rf`` (its compliance added by the caller: rules judge the document)."""
    setup = public_setup(rf.setup)
    figures = [figure_of(f.name, f.unit, f.higher_is_better, f.values, f.validity, f.marks)
               for f in rf.figures.values()]
    system = system_of(rf.setup, figures)
    return {"format": FORMAT, "version": VERSION, "origin": "measured",
            "title": f"{rf.kind} {scenario} on {system['gpu']}",
            "run": {"id": rf.run.run_id, "name": rf.run.name, "kind": rf.kind, "scenario": scenario,
                    "status": rf.run.status, "started": rf.started},
            "published_at": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "system": system, "suite": suite_of(rf.setup, setup), "command": command,
            "setup": setup, "figures": figures,
            "ratios": ratios_of(figures, rf.setup.get("scenario.baseline", ""), scenario),
            "marks": {k: scrub(v) for k, v in rf.mark_lines().items()},
            "answers": {k: scrub(str(v)) for k, v in rf.answers.items()}, "plots": plots,
            "compliance": {"verdict": "not judged yet", "rules": []}}


def scrub(text: str) -> str:
    """A sentence a run said, without credentials and with each path of this machine in it as ``<path>``."""
    return PATH_IN_TEXT.sub(r"\1<path>", redact(text))[:2000]


def figure_of(name: str, unit: str, higher: bool, values: list[float], validity: str,
              marks: list[str]) -> dict[str, Any]:
    kept = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return {"name": name, "unit": unit, "higher_is_better": higher, "values": kept, "summary": summary(kept),
            "validity": validity, "marks": list(marks), "window": WINDOWS.get(unit, "each repeat's own figure")}


def split_name(name: str) -> tuple[str, str, str]:
    """(scenario part, phase, figure) of a figure's name: 'cpu / mnist-torch train s' is ('', 'cpu', ...), a
    study's 'gpu-vs-cpu / cpu / mnist-torch train s' ('gpu-vs-cpu', 'cpu', ...), a bench run's ('', '', name)."""
    parts = name.split(" / ")
    if len(parts) == 1:
        return "", "", name
    return (" / ".join(parts[:-2]), parts[-2], parts[-1])


def ratios_of(figures: list[dict[str, Any]], baseline: str, scenario: str) -> list[dict[str, Any]]:
    """Each phase's figure over its baseline's: the scenario's baseline where it holds the figure, else the first
    phase that does, one that ran alone before one that ran beside others (a mixed phase, a count of guests). Named
    '<scenario or study part>: <phase> vs <baseline>: <figure>', as the reference study's are."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in figures:
        part, phase, what = split_name(f["name"])
        if phase and what != MAKESPAN:  # a phase's whole wall time: its work differs by phase (CAD alone, ML alone)
            groups.setdefault((part, what), []).append({**f, "phase": phase})
    out = []
    for (part, what), found in groups.items():
        base = pick_baseline(found, baseline)
        for f in found:
            if f is base or not base["values"] or not f["values"]:
                continue
            out.append({"name": f"{part or scenario}: {f['phase']} vs {base['phase']}: {what}", "of": f["name"],
                        "to": base["name"], "higher_is_better": f["higher_is_better"],
                        "summary": ratio_summary(f["values"], base["values"])})
    return out


def pick_baseline(found: list[dict[str, Any]], baseline: str) -> dict[str, Any]:
    named = [f for f in found if f["phase"] == baseline]
    alone = [f for f in found if not re.search(r"(^|/)(mixed|n\d+)$", f["phase"])]
    return (named or alone or found)[0]


def public_setup(params: dict[str, str]) -> dict[str, str]:
    """The run's params a reader may see: where it wrote (stores, folders) and what names this machine's paths or
    host are left out, credentials redacted, old names (read for a release) dropped."""
    out = {}
    for key, value in sorted(params.items()):
        if key.startswith(OLD_NAMES) or (key.startswith(NOT_SETUP) and not key.startswith("host.")):
            continue
        text = redact(str(value))[:2000]
        out[key[:200]] = LEFT_OUT if key.startswith(HIDDEN) or LOCAL.search(text) else text
    return out


def config_sha256(setup: dict[str, str]) -> str:
    """The hash of the configuration a reader sees (the setup less the host's own facts, host.* and lib.*)."""
    keep = {k: v for k, v in sorted(setup.items()) if not k.startswith(("host.", "lib."))}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()


def pins_sha256() -> str:
    """The hash of the dependency pins this checkout installs (pyproject.toml's: the project's lock)."""
    text = (REPO / "pyproject.toml").read_text() if (REPO / "pyproject.toml").exists() else ""
    pins = sorted(set(re.findall(r'"([A-Za-z0-9_.\[\]-]+==[^"]+)"', text)))
    return hashlib.sha256("\n".join(pins).encode()).hexdigest()


def suite_of(params: dict[str, str], setup: dict[str, str]) -> dict[str, Any]:
    commit = str(params.get("host.git_sha", "unknown"))[:80]
    return {"commit": commit, "modified": None if commit == "unknown" else commit.endswith("-dirty"),
            "pins_sha256": pins_sha256(), "config_sha256": config_sha256(setup),
            "libraries": {k[4:]: str(v)[:200] for k, v in sorted(params.items()) if k.startswith("lib.")}}


def system_of(params: dict[str, str], figures: list[dict[str, Any]]) -> dict[str, str]:
    """What it ran on, in a reader's words; the profile's enforcement is its figures' weakest validity."""
    p = {k: redact(str(v)) for k, v in params.items()}
    backend = p.get("backend", "")
    hypervisor = p.get("provenance.hypervisor") or {"local": "none: guests are processes on the host",
                                                    "vm": "QEMU (the suite's own VMs)",
                                                    "ray": "a site's VMs (Ray nodes)"}.get(backend, "-")
    validities = [f["validity"] for f in figures] or [p.get("validity", NOT_ENFORCED)]
    return {"gpu": p.get("provenance.GPU") or p.get("host.gpu_names", "-"), "gpu_count": p.get("host.gpu_count", "-"),
            "driver": p.get("host.driver_version") or p.get("provenance.driver", "-"),
            "cuda_driver": p.get("host.cuda_driver_version", "-"), "vgpu_manager_or_hypervisor": hypervisor,
            "profile": p.get("profile.name", p.get("profile", "-")), "gpu_access": p.get("profile.gpu_access", "-"),
            "framebuffer_MiB": p.get("profile.framebuffer_MiB", "-"),
            "scheduler": f"{p.get('profile.scheduler', '-')}, sharing={p.get('sharing', '-')}",
            "enforcement": weakest(validities), "cpu": p.get("host.cpu_model", "-"),
            "cores": f"{p.get('host.cpu_physical', '-')} physical, {p.get('host.cpu_logical', '-')} logical",
            "memory_MiB": p.get("host.mem_total_MiB", "-"), "os": p.get("host.os", "-")}
