"""The NVIDIA driver of a VM image (suites/backends/vm/nvidia.py): a GRID .run is checked before anything is built
from it, the open modules are fitted to the image kernel they are built for, the user-space keeps its links, and
the image's own apt sources leave the host's lists alone."""

from __future__ import annotations

from pathlib import Path

from tests.support.driver_runs import GOOD, run_file


def test_a_run_asking_for_a_fake_grid_driver_or_an_image_without_its_driver_is_one_error_line(tmp_path: Path):
    from tests.support.helpers import SMOKE, one_error_line, run_bench

    fake = run_file(tmp_path, GOOD, b"#!/bin/sh\necho not a driver\n")
    run = run_bench(tmp_path / "a", *SMOKE, "backend=vm", "vm.accel=tcg", f"vm.guest_driver={fake}")
    assert one_error_line(run.proc) == f"error: vm.guest_driver={fake}: not a makeself archive (NVIDIA's .run " \
        "files are; this one starts with b'#!/bin/sh\\necho n')"
    assert not run.run_dir.exists()
    run = run_bench(tmp_path / "b", *SMOKE, "backend=vm", "vm.accel=tcg", "vm.guest_driver=open",
                    f"vm.image_dir={tmp_path / 'none'}")
    assert one_error_line(run.proc).startswith(f"error: backend=vm: no VM image in {tmp_path / 'none'}")
