"""make bench-peer: the published airbench94 (PyPI ``airbench``) and cifar10-torch side by side, here on the CPU
with the peer's CUDA calls redirected for the length of its run."""

from __future__ import annotations

import pytest
import torch

from suites.commands import selfmeasure_peer


@pytest.fixture(scope="module")
def airbench():
    """The peer, imported by the tests that use it (collecting this module imported it in every test process)."""
    return pytest.importorskip("airbench", reason="the peer comes with the dev extra (make setup)")


def test_the_two_networks_match_in_size_and_cost(airbench):
    ours, peer = selfmeasure_peer.flops(airbench, torch.device("cpu"), "fp32")
    assert ours[1] == peer[1] == pytest.approx(1.97e6, rel=0.01)  # parameters
    assert ours[2] == pytest.approx(peer[2], rel=0.05) and peer[2] == pytest.approx(708e6, rel=0.01)  # FLOPs/img


def test_both_sides_run_interleaved_and_the_ratio_is_reported(capsys: pytest.CaptureFixture[str]):
    assert selfmeasure_peer.main(["--batch", "32", "--warmup", "1", "--steps", "2", "--rounds", "2", "--threads", "1",
                            "--data-root", ""]) == 0
    out = capsys.readouterr().out
    assert out.count("round 1/2: ours") == out.count("round 2/2: peer") == 1
    assert out.index("round 1/2: ours") < out.index("round 1/2: peer")  # round 1: ours first...
    assert out.index("round 2/2: peer") < out.index("round 2/2: ours")  # ...round 2: the peer first
    said = " ".join(out.split())  # the caption wraps at the table's width, wherever the words fall
    assert "ours / peer" in said and "96 synthetic CIFAR-shaped images" in said
    assert "nn.Module.cuda -> cpu" in said  # what was changed for the peer is said (wherever the caption wraps)


def test_without_steps_both_sides_train_for_the_window_our_calibration_sizes(capsys: pytest.CaptureFixture[str]):
    assert selfmeasure_peer.main(["--batch", "32", "--warmup", "1", "--window-s", "0.4", "--rounds", "1", "--threads",
                            "1", "--data-root", ""]) == 0
    out = " ".join(capsys.readouterr().out.split())
    steps = int(out.split("1 warm-up + ")[1].split(" timed steps")[0])
    assert steps >= 20 and "sized for a 0.4 s window" in out and "640 synthetic CIFAR-shaped images" in out
