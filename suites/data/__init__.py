"""Datasets: where they are, whether they are intact, and synthetic stand-ins.

The runner resolves data *before* any guest starts, so a missing or damaged
dataset is one clear line, not a crash inside a worker. Synthetic data is
always written in the dataset's real on-disk format and read back through the
same loader as the real files. Each dataset module ends with its
:class:`~suites.data.dataset.Dataset` (``mnist.MNIST``, ``cifar.CIFAR10``), which
a workload plugin names as its ``dataset``.
"""
