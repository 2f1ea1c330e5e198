"""Workload plugins. Importing this package registers every plugin and its schema."""

from suites.workloads import cifar10_torch, cuda_probe, keras_models, mnist_torch  # noqa: F401  (registers them)
from suites.workloads.base import REGISTRY, GuestContext, StepMeter, Workload, WorkloadConfig
from suites.workloads.graphics import apitrace, replay  # noqa: F401  (registers graphics-replay, apitrace-replay)

__all__ = ["REGISTRY", "GuestContext", "StepMeter", "Workload", "WorkloadConfig"]
