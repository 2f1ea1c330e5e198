"""What a rehearsal plays (suites/gpucheck/played.py): each check's command with ``stand_in=<device file>``
(suites/config/stand_in.py plays it: tests/unit/suites/config/test_stand_in.py), what only a GPU can say not
played."""

from __future__ import annotations

from suites.config import device_file
from suites.config.compose import compose_run
from suites.config.schema import register_configs
from suites.gpucheck.played import NOT_PLAYED, StandIn


def test_a_checks_command_line_carries_the_device_file_and_composes_at_its_speed():
    register_configs()
    h200 = StandIn(device_file.load("h200"))
    line = h200.bench(["profile=passthrough-1gpu", "workload=mnist-torch"])
    assert line[:2] == ["profile=passthrough-1gpu", "workload=mnist-torch"]
    assert line[2] == f"stand_in='{device_file.path_of('h200')}'"  # quoted: a path may hold Hydra's grammar
    (group,) = compose_run(line).runs[0].groups
    assert group.workload.name == "fixed-step" and group.workload.step_ms == 4.414


def test_what_only_a_gpu_can_say_is_not_played_and_the_suites_own_commands_are():
    assert set(NOT_PLAYED) == {"a", "c1", "c2", "d", "e", "f", "g"}  # k (make size) and h (make study) are played
