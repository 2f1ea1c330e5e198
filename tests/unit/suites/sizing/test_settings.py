"""Tests of ``suites/sizing/settings.py``: a sizing's settings from its file and ``sizing.*``, checked, and
as the MLflow params two sizings are compared on."""

from __future__ import annotations

import pytest

from suites.errors import ConfigError
from suites.sizing.settings import describe, load_settings, split_args


def test_the_command_line_splits_into_the_file_its_settings_and_the_bench_overrides():
    name, mine, rest = split_args(["sizing=default", "sizing.repeats=2", "profile.vcpus=1", "+preset=smoke"])
    assert (name, mine, rest) == ("default", ["sizing.repeats=2"], ["profile.vcpus=1", "+preset=smoke"])
    assert split_args([])[0] == "default"


def test_a_setting_over_the_file_is_checked_and_its_limits_drop_the_unlimited():
    s = load_settings("default", ["sizing.repeats=2", "sizing.qos.cad_p99_frame_ms=150"])
    assert s.repeats == 2 and s.limits["cad_p99_frame_ms"] == 150.0 and "cad_stutter_pct" not in s.limits
    with pytest.raises(ConfigError, match=r"sizing.repeats: must be 1..20, got 0"):
        load_settings("default", ["sizing.repeats=0"])
    with pytest.raises(ConfigError, match=r"sizing=../x: no such sizing file"):
        load_settings("../x", [])


def test_the_params_name_the_mix_and_limits_first_and_the_steps_measured():
    params = describe(load_settings("default", ["sizing.counts=[1,2,4]"]))
    assert list(params)[:2] == ["mix", "cad_size"] and params["mix"] == "cad=20,ml=2"
    assert params["counts"] == params["steps"] == "1,2,4" and describe(load_settings("default", []))["steps"] == "each"


@pytest.mark.parametrize("arg, says", [
    ("sizing.host.cpu_overcommit=inf", "sizing.host.cpu_overcommit: must be vCPUs per core in (0, 64], got inf"),
    ("sizing.host.cores=0", "sizing.host.cores: must be a core count >= 1 (or null: not a limit), got 0"),
    ("sizing.host.cores=-4", "sizing.host.cores: must be a core count >= 1"),
    ("sizing.host.memory_MiB=-1", "sizing.host.memory_MiB: must be MiB >= 256 (or null: not a limit), got -1"),
    ("sizing.price.gpu=-4000", "sizing.price.gpu: must be a finite price >= 0 (or null: not priced), got -4000.0"),
    ("sizing.price.licence_per_year=-450", "sizing.price.licence_per_year: must be a finite price >= 0"),
    ("sizing.price.gpu=inf", "sizing.price.gpu: must be a finite price >= 0 (or null: not priced), got inf"),
    ("sizing.price.gpu=nan", "sizing.price.gpu: must be a finite price >= 0 (or null: not priced), got nan"),
    ("sizing.reserve_MiB=-1e12", "sizing.reserve_MiB: must be MiB in [0, 1048576]"),
    ("sizing.reserve_MiB=nan", "sizing.reserve_MiB: must be MiB in [0, 1048576], got nan"),
    ("sizing.years=inf", "sizing.years: must be years in (0, 100], got inf"),
    ("sizing.qos.bogus=5", "sizing.qos: no such QoS metric bogus"),
    ("sizing.qos_typical.cad_slowdown_pct=nan", "sizing.qos_typical: each limit must be a finite number > 0"),
    ("sizing.mix={}", "sizing.mix={}: empty: name its entries"),
    ("sizing.users.huge=3", "sizing.users: must give CAD users (>= 0, not all 0) of the types light, medium, heavy"),
])
def test_a_number_no_host_price_or_limit_can_be_is_refused(arg: str, says: str):
    with pytest.raises(ConfigError) as err:
        load_settings("default", [arg])
    assert str(err.value).startswith(says)


def test_the_mix_and_user_types_read_as_hydra_reads_them():
    assert load_settings("default", ["sizing.mix={cad:40,ml:4}"]).mix == {"cad": 40, "ml": 4}
    assert load_settings("default", ["sizing.mix={cad: 40, ml: 4}"]).mix == {"cad": 40, "ml": 4}
    s = load_settings("default", ["sizing.users={light: 20, heavy: 5}"])
    assert s.cad_users == {"light": 20, "heavy": 5} and list(s.levels) == ["strict", "typical"]
    assert load_settings("default", []).cad_users == {"medium": 20}


def test_the_old_policy_name_time_slice_is_read_as_the_sharing_word_timeslice_and_said():
    import pytest

    from suites.sizing.settings import load_settings

    with pytest.warns(FutureWarning, match=r"^sizing.policies: time-slice is timeslice now, as sharing= says it"):
        settings = load_settings("default", ["sizing.policies=[time-slice,mps]"])
    assert settings.policies == ["timeslice", "mps"] and load_settings("default", []).policies == ["timeslice", "mps"]


def test_the_old_name_of_counts_is_read_and_said():
    import pytest

    with pytest.warns(FutureWarning, match=r"^sizing.steps is sizing.counts now"):
        old = load_settings("default", ["sizing.steps=[1,2,4]"])
    assert old.counts == [1, 2, 4] and old.steps is None
