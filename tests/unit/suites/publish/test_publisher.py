"""Tests of ``suites/publish/publisher.py``: a bundle's command leaves this machine's paths behind, and a rerun takes
a bundle's command only where it is the suite's own measuring command with settings (a bundle is data)."""

from __future__ import annotations

import pytest

from suites.bundle import Bundle
from suites.publish.publisher import public_command, rerun_command
from suites.publish.reference import reference_document
from tests.support.bundles import comparison


def bundle(command: str) -> Bundle:
    doc = reference_document()
    doc["command"] = command
    return Bundle(doc)


def test_the_published_command_names_no_local_path_or_store():
    rf = comparison({})
    got = public_command("python -m suites bench scenario=gpu-vs-cpu tracking_uri=sqlite:////home/a/m.db "
                         "artifact_dir=/home/a/art hydra.run.dir=/tmp/x data.root=../data profile=m60-8q", rf)
    assert got == "python -m suites bench scenario=gpu-vs-cpu profile=m60-8q  # 4 argument(s) naming local paths " \
                  "or stores left out"
    assert public_command("", rf).startswith("make bench (the run's own command was not recorded")


def test_a_rerun_runs_the_suites_own_measuring_command_with_its_settings_only():
    assert rerun_command(bundle("python -m suites bench scenario=gpu-vs-cpu profile=m60-8q  # 2 left out")) == \
        ["bench", "scenario=gpu-vs-cpu", "profile=m60-8q"]


@pytest.mark.parametrize("command, says", [
    ("rm -rf /", "is not 'python -m suites <command> ...'"),
    ("python -m suites sync --to http://evil", "a rerun runs bench, study, size"),
    ("python -m suites bench --cfg job", "a rerun takes the bundle's settings"),
    ("python -m suites bench hydra.run.dir=/etc", "a rerun takes the bundle's settings"),
    ("python -m suites bench 'unclosed", "not a command line"),
    ("python -m suites bench x=1; rm -rf /", "a rerun takes the bundle's settings"),
])
def test_a_bundles_command_that_is_not_one_is_refused_in_one_line(command: str, says: str):
    with pytest.raises(ValueError, match=says):
        rerun_command(bundle(command))
