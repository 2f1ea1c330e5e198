"""Tests of ``suites/commands/rehearse.py``: each check's judge misses where it should, the device files, the
device file make gpu-check writes. (The rehearsal itself, for both GPUs: tests/e2e/test_rehearse.py.)"""

from __future__ import annotations

import math

import pytest

from suites.commands import rehearse
from suites.commands.rehearse import (
    data_checks,
    device,
    device_file,
    judge_budget,
    judge_memory,
    judge_overlap,
    judge_ratio,
    judge_window,
)
from tests.support.hosts import gpu_host, host


def test_every_judge_misses_what_it_guards():
    assert judge_ratio(9.8, "time per image").ok and not judge_ratio(2.7, "time per image").ok  # cce1a94's 2.70
    assert not judge_ratio(10.0, "train time").ok  # equal work is time per image, whatever the figure
    assert judge_window("g0", 2.1, 2.0).ok and not judge_window("g0", 0.56, 2.0).ok
    assert not judge_window("bench-ml fixed-step", math.nan, 2.0).ok  # a row without a rate
    assert judge_overlap(98.0, 3).ok and not judge_overlap(40.0, 1).ok  # one pass beside a 2 s window
    assert judge_memory("m60-1q", 684, 230, 1024).ok and not judge_memory("m60-1q", 684, 257, 1024).ok
    assert judge_budget("study plan", 377, 480).ok and not judge_budget("make size plan", 2700, 540).ok


def test_a_guest_holding_the_whole_split_in_fp32_misses_m60_1q():
    """cce1a94's mnist-torch: the context and ~565 MB of whole-split fp32 temporaries, past M60-1Q's 1,024 MiB."""
    dev = device("h200")
    assert dev["cuda_context_MiB"] + 565 > 1024
    assert all(c.ok for c in data_checks(dev, 230.0))
    assert [c.name for c in data_checks(dev, 565.0) if not c.ok] == ["memory within cap: m60-1q"]
    # the H200's m60-1q guest evaluating at 2,000 images: 257 MiB counted, stopped at its cap on the GPU
    assert [c.name for c in data_checks(dev, 257.0) if not c.ok] == ["memory within cap: m60-1q"]


def test_the_device_files_of_both_gpus_have_what_the_rehearsal_plays():
    for gpu in ("h200", "h100"):
        dev = device(gpu)
        assert dev["step_ms"]["mnist-torch/512"] > 0 and dev["mem_total_MiB"] > 80_000 and dev["source"]
    with pytest.raises(SystemExit, match="GPU=a100: no device file"):
        device("a100")


def test_make_gpu_check_writes_the_device_file_from_what_it_measured():
    b1 = {"guests": [{"spec": {"workload": "mnist-torch", "workload_config": {"batch_size": 512}},
                      "result": {"metrics": {"images_per_sec": 109_196.0}, "info": {"cuda_context_MiB": 684}}}]}
    e = {"guests": [{"spec": {"workload": "graphics-replay", "workload_config": {}},
                     "result": {"metrics": {"mechanical.fps": 1508.0, "images_per_sec": math.nan},
                                "info": {"viewsets": ["mechanical"]}}}]}
    made = device_file(gpu_host("NVIDIA H200", 143_771.0), {"b1-mnist": b1, "e-egl": e}, {"mnist-torch/full": 0.83})
    assert made is not None and made["gpu"] == "NVIDIA H200" and made["mem_total_MiB"] == 143_771.0
    assert made["step_ms"] == {"mnist-torch/512": 4.689} and made["frame_ms"] == {"mechanical": 0.663}
    assert made["cuda_context_MiB"] == 684 and made["work_s"] == {"mnist-torch/full": 0.83}
    assert device_file(host(), {}, {}) is None  # no GPU: no device file


def test_strict_refuses_a_rehearsal(capsys):
    assert rehearse.main(["--gpu", "h200", "strict=true"]) == 2
    assert capsys.readouterr().err.startswith("error: strict=true: a rehearsal is no measurement")


def test_an_interrupted_rehearsal_says_so_in_one_line_and_exits_130(monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(rehearse, "run_checks", interrupted)
    assert rehearse.main(["--gpu", "h200", "--short"]) == 130
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["rehearse: interrupted; nothing was recorded (its runs' temporary store is "
                                        "removed)"] and "Traceback" not in err
