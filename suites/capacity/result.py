"""One sizing as plain data: what the command measured or reused, read, solved and records (the report's input)."""

from __future__ import annotations

from dataclasses import dataclass, field

from suites.capacity.curve import Capacity
from suites.capacity.density import Cell
from suites.capacity.solver import Answer, Candidate, Mix
from suites.validity import NOT_ENFORCED, is_emulated, weakest

__all__ = ["SizingResult", "title_label"]


@dataclass
class SizingResult:
    mix: Mix
    gpu: str  # the GPU sized for
    limits: dict[str, float]
    capacities: dict[str, Capacity]  # profile -> its curve read (only the measured ones)
    answer: Answer
    validity: dict[str, str]  # profile -> what its measurement is worth (placement's validity words)
    provenance: dict[str, str]  # GPU, driver, mode, policy, clocks, host, run ids
    notes: list[str] = field(default_factory=list)  # what was skipped or assumed, one line each
    policies: dict[str, dict[str, float]] = field(default_factory=dict)  # policy -> {profile.n_point, .p99_ms}
    tier: str = "full"
    # CAD user types and QoS levels (NVIDIA's sizing guides' shape): the answer above is the first type's at the
    # strict level; these give every type and level
    answers: dict[str, Answer] = field(default_factory=dict)  # user type -> its answer (strict level)
    users: dict[str, int] = field(default_factory=dict)  # user type -> CAD users
    curves: dict[tuple[str, str], dict[str, Capacity]] = field(default_factory=dict)  # (type, level) -> curves
    levels: dict[str, dict[str, float]] = field(default_factory=dict)  # level -> its limits
    density: list[tuple[str, str, Candidate, Cell]] = field(default_factory=list)  # (type, level, profile, cell)
    provision: dict[str, list[str]] = field(default_factory=dict)  # user type -> the VM to provision, in lines

    @property
    def doubt(self) -> str:
        """'inconclusive: <why>; to size: <what to do>' where any type's answer rests on noise, else ''."""
        return next((a.inconclusive for a in self.answers.values() if a.inconclusive), self.answer.inconclusive)

    @property
    def weakest(self) -> str:
        return weakest(list(self.validity.values()))


def title_label(result: SizingResult) -> str:
    """What the sizing is worth, at the head of every rendering (as the comparison figures say theirs)."""
    weakest, fleet = result.weakest, "fleet" in result.provenance
    if fleet and weakest == NOT_ENFORCED:
        how = " (their NVML replayed from recordings)" if "NVML" in result.provenance else ""
        return f"not a GPU sizing: the fleet's guests ran on their nodes' CPUs{how}; profiles not enforced"
    if fleet:
        return f"measured on the fleet's vGPUs, each node's profile set by its hypervisor ({weakest})"
    if weakest == NOT_ENFORCED:
        return "not a GPU sizing: profiles emulated on the CPU (no GPU; profiles not enforced)"
    if is_emulated(weakest):
        return f"profiles emulated on {result.provenance.get('GPU', 'another GPU')} ({weakest}), not their own GPU"
    return "measured on the profiles' own GPU (enforced)"
