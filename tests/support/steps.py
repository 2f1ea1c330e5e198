"""A fixed-step workload for the tests of runs sized by time: every step takes as long as it is told."""

from __future__ import annotations

from suites.workloads.fixed_step import FixedStep, FixedStepConfig


def fixed_step(**cfg: object) -> FixedStep:
    from suites.workloads.base import GuestContext

    config = FixedStepConfig(**cfg)  # type: ignore[arg-type]
    config.check()
    w = FixedStep(config, GuestContext("g0", [0], [], None, {}, 0))
    w.prepare()
    return w
