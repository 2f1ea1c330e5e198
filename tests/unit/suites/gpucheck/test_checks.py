"""Tests of ``suites/gpucheck/checks.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.gpucheck import checks as gpu_checks
from tests.support.fakes import vendor


def test_gpu_check_e_is_skipped_with_the_reason_on_a_gpu_host_without_nvidia_egl(tmp_path: Path,
                                                                                     monkeypatch: pytest.MonkeyPatch):
    from gpu_probe.inventory import Inventory
    from suites.gpucheck import checks as gpu_checks

    vendor(tmp_path, "50_mesa.json", "libEGL_mesa.so.0")
    monkeypatch.setenv("__EGL_VENDOR_LIBRARY_DIRS", str(tmp_path))
    inv = Inventory("h", "linux", "3.11", "cpu", 2, 2, 2, 24000.0,
                    gpus=[{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-abc"}])
    ctx = gpu_checks.Context(tmp_path / "root", inv, None, deadline=1e12, say=lambda s: None)
    row = gpu_checks.run_check(ctx, "e", lambda: gpu_checks.egl(ctx))
    assert row.result.startswith("skipped: no NVIDIA EGL vendor library"), row.result
    assert not (tmp_path / "root" / "runs").exists()  # no guest started


def test_b2_b3_say_a_window_too_short_for_a_2_percent_cov():
    from suites.gpucheck import checks as gpu_checks
    from suites.gpucheck import judges as judge

    short = {"status": "ok", "host_metrics": {}, "sampler": {},
             "guests": [{"result": {"guest_id": "g0", "status": "ok", "error": None,
                                    "info": {"device": "H100", "images_per_sec_blank": "0.4 s timed < 1 s"},
                                    "metrics": {}, "repeats": [{"images_per_sec": float("nan")}] * 5},
                         "sampled": {}}]}
    assert judge.cifar(short).result == ("failed: a repeat's timed window carries no rate (0.4 s timed < 1 s): too "
                                         "short for a 2 % CoV")
    assert gpu_checks.CIFAR_EPOCHS >= 10 and gpu_checks.CIFAR_MIN_WINDOW_S >= 1.0  # ~2 s a repeat at the goal


def test_every_check_is_registered_once_with_its_rule_and_has_its_place_in_the_order():
    from suites.gpucheck import campaign

    assert sorted(gpu_checks.CHECKS) == sorted(campaign.PRIORITY) == sorted(
        ["a", "b1", "b2", "b3", "c1", "c2", "c3", "d", "e", "f", "g", "h", "i", "j", "k", "l"])
    assert all(c.title and c.expected for c in gpu_checks.CHECKS.values())
    with pytest.raises(ValueError, match="registered twice"):
        gpu_checks.check("a", "again", "rule")(lambda ctx: None)

