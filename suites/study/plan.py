"""Which parts of the reference study this host can run, at which sizes, within the budget: a pure planner.

The reference study (a hypervisor vendor's two-part blog, 4 x Tesla M60):
episode 1 asked whether a GPU speeds MNIST up, how CIFAR-10 images/s scale
over 1, 2 and 4 GPUs, what vGPU costs against passthrough, and one 4-GPU VM
against four 1-GPU VMs; episode 2 ran 3D CAD beside MNIST training on
M60-8Q/4Q/2Q/1Q. Each becomes one comparison (a :class:`StudyPart`) of this
suite's scenarios. :func:`plan_study` keeps the phases this host can run
(GPU count, optional libraries), sizes them by ``study.budget_s`` and says
why everything else is skipped; nothing here touches a file or a process.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from suites.campaign import REPEAT_S, START_S, WORK_S
from suites.config.overrides import override
from suites.study.settings import StudySettings

TIME_X, THROUGHPUT_X = "time_x", "throughput_x"
DEFAULT_REPEATS = 3
CONSOLIDATION_MEMORY_MiB = 4096  # per guest: a smoke or default-size CAD or MNIST guest stays well under it
PLAN_SHARE = 0.8  # of study.budget_s the plan fills: the rest is the estimate's margin (the deadline is hard)


@dataclass(frozen=True)
class Reference:
    """One figure of the reference study, for one phase of a part."""

    phase: str
    metric: str  # TIME_X or THROUGHPUT_X for episode 1; "" where the figure is a sentence (episode 2)
    value: float | None
    text: str


@dataclass(frozen=True)
class StudyPart:
    """One comparison of the study: a scenario, a workload, the phases it keeps and what each needs."""

    name: str
    episode: int
    scenario: str
    workload: str
    phases: tuple[tuple[str, int], ...]  # (label, GPUs it needs on this host); the first is the baseline
    references: tuple[Reference, ...]
    needs: tuple[str, ...] = ()  # optional components: "tensorflow", "moderngl"
    overrides: tuple[str, ...] = ()

    @property
    def labels(self) -> list[str]:
        return [label for label, _ in self.phases]


def _ref(phase: str, metric: str, value: float | None, text: str) -> Reference:
    return Reference(phase, metric, value, text)


MIXED_REFERENCE = {"m60-8q": "CAD < 5 %, ML < 15 % slower; concurrent beats sequential",
                   "m60-4q": "CAD < 5 %, ML < 15 % slower; concurrent beats sequential",
                   "m60-2q": "CAD < 5 %, ML < 15 % slower; concurrent beats sequential",
                   "m60-1q": "both significantly slower; sequential beats concurrent"}
EPISODE_1 = (
    StudyPart("gpu-vs-cpu", 1, "gpu-vs-cpu", "mnist-torch", (("1-gpu", 1), ("cpu", 0)),
              (_ref("cpu", TIME_X, 10.06, "MNIST train time 10.06x without GPU; CPU 43 % vs 8 %"),)),
    StudyPart("gpu-vs-cpu-keras", 1, "gpu-vs-cpu", "mnist-tf", (("1-gpu", 1), ("cpu", 0)),
              (_ref("cpu", TIME_X, 10.06, "MNIST train time 10.06x without GPU (Keras)"),), needs=("tensorflow",)),
    StudyPart("scaling", 1, "scaling", "cifar10-torch", (("1-gpu", 1), ("2-gpu", 2), ("4-gpu", 4)),
              (_ref("2-gpu", THROUGHPUT_X, 2.04, "CIFAR-10 images/s 2.04x on 2 GPUs"),
               _ref("4-gpu", THROUGHPUT_X, 3.74, "CIFAR-10 images/s 3.74x on 4 GPUs"))),
    StudyPart("passthrough-vs-vgpu-mnist", 1, "passthrough-vs-vgpu", "mnist-torch",
              (("passthrough", 1), ("vgpu-8q", 1)),
              (_ref("vgpu-8q", TIME_X, 1.05, "MNIST train time 1.05x on M60-8Q vs passthrough"),)),
    StudyPart("passthrough-vs-vgpu-cifar10", 1, "passthrough-vs-vgpu", "cifar10-torch",
              (("passthrough", 1), ("vgpu-8q", 1)),
              (_ref("vgpu-8q", THROUGHPUT_X, 0.87, "CIFAR-10 images/s 0.87x on M60-8Q vs passthrough"),)),
    StudyPart("multi-guest", 1, "multi-guest", "cifar10-torch", (("1x4gpu", 4), ("4x1gpu", 4), ("4xvgpu-8q", 1)),
              (_ref("4x1gpu", THROUGHPUT_X, 0.98, "total images/s 0.98x: four 1-GPU VMs vs one 4-GPU VM"),
               _ref("4xvgpu-8q", THROUGHPUT_X, 0.92, "total images/s 0.92x: four M60-8Q VMs vs one 4-GPU VM"))),
)


def episode_2(settings: StudySettings) -> tuple[StudyPart, StudyPart]:
    mixed = StudyPart("mixed", 2, "mixed", "mnist-torch", tuple((p, 0) for p in settings.profiles),
                      tuple(_ref(p, "", None, MIXED_REFERENCE.get(p, "(not in the reference study)"))
                            for p in settings.profiles), needs=("moderngl",))
    cons = StudyPart("consolidation", 2, "consolidation", "mnist-torch", ((settings.consolidation_profile, 0),),
                     (_ref(settings.consolidation_profile, "", None, "(not in the reference study: this suite's own "
                                                                     "CAD guests per GPU at QoS)"),),
                     needs=("moderngl",), overrides=(override("profile", settings.consolidation_profile),
                                                     override("scenario.mixed.max_guests", settings.max_guests),
                                                     # each count adds a guest: 8 GiB each would stop a 24 GiB host at 2
                                                     override("profile.memory_MiB", CONSOLIDATION_MEMORY_MiB)))
    return mixed, cons


@dataclass(frozen=True)
class Skip:
    what: str
    why: str

    def __str__(self) -> str:
        return f"{self.what}: {self.why}"


@dataclass(frozen=True)
class Measured:
    """What the planner knows of this host instead of its table: ``trials``, seconds of a whole phase run per
    (workload, tier) on this host's own device (CPU or GPU), by the study's trial runs; ``gpu_work``, GPU training
    seconds per (workload, tier) from make gpu-check."""

    trials: dict[tuple[str, str], float] = field(default_factory=dict)
    gpu_work: dict[tuple[str, str], float] = field(default_factory=dict)
    cores: int = 0  # this host's cores: a CPU host's guests share them (0: unknown, not counted)
    spent_s: float = 0.0  # seconds the study already spent measuring, out of its budget


@dataclass
class StudyPlan:
    parts: list[StudyPart]
    skips: list[Skip]
    tier: str  # workload sizes: full or smoke
    repeats: int
    estimate_s: float
    gpus: int
    part_estimates: dict[str, float] = field(default_factory=dict)  # part name -> seconds planned
    sources: dict[str, str] = field(default_factory=dict)  # workload -> where its seconds came from

    def overrides(self, part: StudyPart) -> list[str]:
        """The command line of one part: its scenario and workload, sizes, repeats, phases' own settings."""
        sizes = [override("preset", "smoke", "+")] if self.tier == "smoke" else []
        extra = [override("scenario.mixed.profiles", list(part.labels))] if part.scenario == "mixed" else []
        return [override("scenario", part.scenario), override("workload", part.workload), *sizes, *part.overrides,
                *extra, override("scenario.repeats", self.repeats)]


def phase_work_s(part: StudyPart, label: str, needs_gpus: int, tier: str, host: str, measured: Measured) -> float:
    """Seconds one run of one phase is planned to take after its comparison's start (:func:`estimate_s` adds that
    once): this host's trial run less that start where it ran that workload on the device the phase uses,
    else make gpu-check's GPU seconds with the cost per repeat, else the table."""
    def run(workload: str, device: str) -> float:
        if device == host and (workload, tier) in measured.trials:  # a whole command: its start is the part's
            return max(measured.trials[(workload, tier)] - START_S[host], REPEAT_S[host])
        if device == "gpu" and (workload, tier) in measured.gpu_work:
            return REPEAT_S[device] + measured.gpu_work[(workload, tier)]
        return REPEAT_S[device] + float(WORK_S.get((workload, tier), {}).get(device, 30.0))

    if part.episode == 1:  # a phase that needs no GPU trains on the CPU wherever it runs
        return run(part.workload, host if needs_gpus else "cpu")
    return max(run("graphics-replay", host), run("mnist-torch", host))


def source_of(workload: str, tier: str, host: str, measured: Measured) -> str:
    """Where the planner's seconds for ``workload`` came from, in words."""
    if (workload, tier) in measured.trials:
        return "a trial run on this host"
    if host == "gpu" and (workload, tier) in measured.gpu_work:
        return "make gpu-check"
    return "table (not measured)"


def estimate_s(part: StudyPart, tier: str, repeats: int, host: str, max_guests: int,
               measured: Measured | None = None) -> float:
    measured = measured or Measured()
    if part.scenario == "consolidation":  # ML alone, then 1..max_guests CAD guests beside it, each count repeated
        per_count = repeats * phase_work_s(part, "", 0, tier, host, measured)  # (its repeats were left out: 2.3x over)
        # on a CPU host the count's k + 1 guests share its cores: a count takes as much longer (an H100 runs them
        # side by side; a 2-core host ran n4's five guests in 2.4x a guest's time)
        shared = (lambda k: max(1.0, (k + 1) / measured.cores)) if host == "cpu" and measured.cores else \
            (lambda k: 1.0)
        return START_S[host] + sum(per_count * shared(k) for k in range(1 + max_guests))
    runs = 3 if part.scenario == "mixed" else 1  # a mixed profile is three phases: CAD, CAD + ML, ML
    return START_S[host] + sum(runs * repeats * phase_work_s(part, label, g, tier, host, measured)
                               for label, g in part.phases)


def runnable(part: StudyPart, gpus: int, missing: dict[str, str]) -> tuple[StudyPart | None, list[Skip]]:
    """The part with the phases this host can run, and a skip for what it cannot (None: nothing worth running)."""
    for need in part.needs:
        if need in missing:
            return None, [Skip(part.name, missing[need])]
    if part.episode == 2:
        return part, []
    host = f"host has {gpus} GPU" + ("s" if gpus != 1 else "") if gpus else "host has no GPU"
    lacking = [(label, g) for label, g in part.phases if g > gpus]
    if not lacking:
        return part, []
    why = ", ".join(f"{label} needs {g} GPU{'s' if g != 1 else ''}" for label, g in lacking) + f"; {host}"
    keep = tuple(p for p in part.phases if p not in lacking)
    if len(keep) < 2 or keep[0] != part.phases[0]:  # no baseline, or nothing to hold against it
        return None, [Skip(part.name, why)]
    kept = {label for label, _ in keep}
    return replace(part, phases=keep, references=tuple(r for r in part.references if r.phase in kept)), \
        [Skip(f"{part.name} {' and '.join(label for label, _ in lacking)}", why)]


DROP_ORDER = ("gpu-vs-cpu-keras", "multi-guest", "passthrough-vs-vgpu-cifar10", "scaling", "consolidation",
              "passthrough-vs-vgpu-mnist", "mixed", "gpu-vs-cpu")  # what the budget gives up first


def fewer_rows(parts: list[StudyPart], max_guests: int) -> tuple[str, list[StudyPart], int] | None:
    """One row given up, in the order a budget gives them up: a consolidation's last CAD guest, a mixed run's last
    profile, then the part :data:`DROP_ORDER` puts first; what was given up, the parts and guests left (None: one
    part of one row is all that is left)."""
    mixed = next((i for i, p in enumerate(parts) if p.scenario == "mixed"), None)
    if max_guests > 2:
        return f"consolidation beyond {max_guests - 1} CAD guests", parts, max_guests - 1
    if mixed is not None and len(parts[mixed].phases) > 1:
        p = parts[mixed]
        shorter = replace(p, phases=p.phases[:-1], references=p.references[:-1])
        return f"mixed {p.phases[-1][0]}", [*parts[:mixed], shorter, *parts[mixed + 1:]], max_guests
    if len(parts) > 1:
        drop = min(parts, key=lambda p: DROP_ORDER.index(p.name))
        return drop.name, [p for p in parts if p is not drop], max_guests
    return None


def plan_study(gpus: int, missing: dict[str, str], settings: StudySettings,
               measured: Measured | None = None) -> StudyPlan:
    """The parts to run on a host with ``gpus`` NVIDIA GPUs, without the ``missing`` components (name -> why),
    sized to ``settings.budget_s`` by what was ``measured`` of this host (its trial runs, make gpu-check's seconds) and
    the table for the rest; every part left out, and every trim, is a Skip with its reason."""
    measured = measured or Measured()
    parts, skips = [], []
    for part in [*EPISODE_1, *episode_2(settings)]:
        kept, why = runnable(part, gpus, missing)
        skips += why
        if kept is not None:
            parts.append(kept)
    host = "gpu" if gpus else "cpu"
    tier = settings.tier if settings.tier != "auto" else ("full" if gpus else "smoke")
    repeats, max_guests = settings.repeats or DEFAULT_REPEATS, settings.max_guests

    def total() -> float:
        return sum(estimate_s(p, tier, repeats, host, max_guests, measured) for p in parts)

    # the trial runs' seconds are the study's too; and the plan keeps a margin, since the deadline is hard (a part that
    # cannot end within the budget does not start) and estimates err: on a 2-core host mixed ran 1.05x its
    # estimate and the consolidation 1.16x, with a command's set-up on top
    budget = settings.budget_s * PLAN_SHARE - measured.spent_s
    spent = f" less the {measured.spent_s:.0f} s spent on trial runs" if measured.spent_s else ""

    def trim(what: str) -> None:
        skips.append(Skip(what, f"over the budget (estimate {total():.0f} s > {PLAN_SHARE:.0%} of "
                                f"study.budget_s={settings.budget_s:g}{spent})"))

    # a GPU host's figures are the study's findings: the run rules' full sizes and 3 repeats are kept, rows given up
    # first (each said); a CPU host's are smoke sizes anyway, and it trims repeats before rows
    keep_rules = tier == "full"
    while parts and total() > budget:
        row = fewer_rows(parts, max_guests)
        if tier == "full" and settings.tier == "auto" and not (keep_rules and row):
            trim("full sizes (smoke sizes instead)")
            tier = "smoke"
        elif repeats > 2 and settings.repeats is None and not (keep_rules and row):
            trim(f"repeat {repeats} of each phase")
            repeats -= 1
        elif row is not None:
            trim(row[0])
            parts, max_guests = row[1], row[2]
        else:
            break
    most = override("scenario.mixed.max_guests", max_guests)
    parts = [replace(p, overrides=tuple(most if o.partition("=")[0] == most.partition("=")[0] else o
                                        for o in p.overrides)) if p.scenario == "consolidation" else p
             for p in parts]
    estimates = {p.name: estimate_s(p, tier, repeats, host, max_guests, measured) for p in parts}
    sources = {w: source_of(w, tier, host, measured) for w in workloads_of(parts)}
    return StudyPlan(parts, skips, tier, repeats, total(), gpus, estimates, sources)


def workloads_of(parts: list[StudyPart]) -> list[str]:
    """The workloads the parts run (episode 2: the CAD and the ML guest's), each once: what a trial run times."""
    out = [w for p in parts for w in ((p.workload,) if p.episode == 1 else ("graphics-replay", "mnist-torch"))]
    return list(dict.fromkeys(out))
