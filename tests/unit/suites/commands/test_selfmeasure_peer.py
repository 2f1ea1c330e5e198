"""Tests of ``suites/commands/selfmeasure_peer.py``."""

from __future__ import annotations

import pytest
import torch

from suites.commands import selfmeasure_peer


def test_the_redirection_lasts_only_for_the_peers_run():
    before = torch.nn.Module.cuda, torch.nn.Module.half, torch.cuda.Event
    with pytest.raises(RuntimeError, match="inside"):
        with selfmeasure_peer.redirected(torch.device("cpu"), "bf16"):
            assert torch.nn.Linear(2, 2).half().weight.dtype == torch.bfloat16
            assert torch.nn.Linear(2, 2).cuda().weight.device.type == "cpu"
            raise RuntimeError("inside")
    assert (torch.nn.Module.cuda, torch.nn.Module.half, torch.cuda.Event) == before
    assert torch.nn.Linear(2, 2).half().weight.dtype == torch.float16


@pytest.mark.parametrize("argv", [["--rounds", "0"], ["--batch", "0"], ["--warmup", "0"], ["--window-s", "0"],
                                  ["--images", "0"]])
def test_bad_input_is_one_error_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exc:
        selfmeasure_peer.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --")
