"""What differs between two runs' set-ups, read from their params: the host and its CPU, the GPU and its driver,
the vGPU profile and its scheduler policy, the hypervisor where seen, the frameworks and the suite's own version,
and then every other configuration key that differs (``workload.step_ms: 5 → 6``). Keys that only say where a
run wrote (its store, its folders) are not a set-up, nor is a value a published bundle left out. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from suites.bundle import LEFT_OUT

__all__ = ["Difference", "differences", "fingerprint"]

# (what a person calls it, the params that say it), in the order they matter to a result
ASPECTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("host", ("host.hostname",)),
    ("CPU", ("host.cpu_model", "host.cpus_usable", "host.mem_total_MiB")),
    ("GPU", ("host.gpu_names", "host.gpu_count", "provenance.GPU")),
    ("driver", ("host.driver_version", "host.cuda_driver_version", "provenance.driver")),
    ("vGPU profile", ("profile.name", "profile.gpu_access", "profile.framebuffer_MiB", "profile.gpu_model")),
    ("scheduler policy", ("profile.scheduler", "sharing", "provenance.vGPU scheduler")),
    ("hypervisor", ("backend", "provenance.hypervisor", "provenance.fleet")),
    ("suite", ("host.git_sha",)),
    ("python", ("host.python", "host.os")),
)
FRAMEWORKS = "lib."  # every tracked library's version (torch, tensorflow, mlflow, ...)
# where a run wrote, or how it talked: never a set-up
NOT_SETUP = ("tracking_uri", "fallback_tracking_uri", "artifact_dir", "data.cache_dir", "experiment", "progress",
             "ray.namespace", "ray.working_dir", "sizing.out_dir", "study.out_dir", "sweep_dir", "elapsed_s",
             "estimate_s", "host.", "recommended", "binds", "validity")  # the last three: a sizing's answer


# A key that one version of the suite records and another does not, at its empty value, is no set-up: nothing was
# set ("[] -> None", "- -> []"); nor are the old names a run's params carry beside the new (config/scenario.py)
EMPTY = {"-", "", "[]", "{}", "None", "null"}
OLD_NAMES = ("scenario.study.", "scenario.mix.", "scenario.mixed.steps", "sizing.steps", "study.calibrate")


@dataclass(frozen=True)
class Difference:
    aspect: str  # host, CPU, GPU, ..., frameworks, config
    key: str
    a: str
    b: str

    def __str__(self) -> str:
        return f"{self.key}: {self.a} → {self.b}"


def differences(a: dict[str, str], b: dict[str, str]) -> list[Difference]:
    """Every set-up key whose value differs (absent on one side: '-'), the named aspects first; a value a published
    bundle left out (a path, a store, a host name) is no difference."""
    hidden = {k for side in (a, b) for k, v in side.items() if v == LEFT_OUT}
    a, b = ({k: v for k, v in side.items() if k not in hidden} for side in (a, b))
    out: list[Difference] = []
    taken: set[str] = set()
    for aspect, names in ASPECTS:
        out += [Difference(aspect, k, shown(a.get(k), k), shown(b.get(k), k)) for k in names if a.get(k) != b.get(k)]
        taken.update(names)
    libs = sorted(k for k in {*a, *b} if k.startswith(FRAMEWORKS))
    out += [Difference("frameworks", k[len(FRAMEWORKS):], shown(a.get(k)), shown(b.get(k))) for k in libs
            if a.get(k) != b.get(k)]
    rest = sorted(k for k in {*a, *b} - taken if not k.startswith(FRAMEWORKS) and not k.startswith(NOT_SETUP)
                  and not k.endswith(("_dir", ".dir")) and not k.startswith(OLD_NAMES))
    out += [Difference("config", k, shown(a.get(k)), shown(b.get(k))) for k in rest
            if shown(a.get(k)) != shown(b.get(k)) and not {shown(a.get(k)), shown(b.get(k))} <= EMPTY]
    return out


def shown(value: str | None, key: str = "") -> str:
    """A param as a person reads it: '-' where absent, a whole number without its '.0' (5.0 is 5), a git SHA as
    git abbreviates it (its first 10 hex digits, ``-dirty`` kept)."""
    if value is None:
        return "-"
    if key == "host.git_sha" and len(value) >= 40:
        return value[:10] + value[40:]
    return value[:-2] if value.endswith(".0") and value[:-2].lstrip("-").isdigit() else value


def fingerprint(params: dict[str, str]) -> str:
    """The machine a run measured, as the study's trial runs key it: name, CPU, cores, GPUs (a history is one
    machine's: another's figures are not a change)."""
    return " | ".join(params.get(k, "?") for k in ("host.hostname", "host.cpu_model", "host.cpus_usable",
                                                    "host.gpu_names"))
