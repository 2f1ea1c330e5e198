"""Tests of ``suites/process_gc.py`` and where the suite's own processes use it. Freezing is process-wide, so
everything that freezes runs in a child Python; only :func:`importing`, which freezes nothing, runs here."""

from __future__ import annotations

import gc
import subprocess
import sys

from suites import process_gc
from tests.support.helpers import REPO


def child(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_importing_pauses_collection_and_freezes_nothing():
    frozen, was = gc.get_freeze_count(), gc.isenabled()
    with process_gc.importing():
        assert not gc.isenabled()
    assert gc.isenabled() == was and gc.get_freeze_count() == frozen


def test_importing_restores_collection_after_a_failed_import():
    try:
        with process_gc.importing():
            import no_such_module_here  # noqa: F401
    except ModuleNotFoundError:
        pass
    assert gc.isenabled()


def test_loading_freezes_what_loaded_and_leaves_collection_as_it_was():
    out = child("import gc, json; from suites import process_gc\n"
                "with process_gc.loading():\n"
                "    paused = not gc.isenabled()\n"
                "    import json.decoder\n"
                "on = gc.isenabled(); gc.disable()\n"
                "with process_gc.loading():\n"
                "    pass\n"
                "print(paused, on, gc.get_freeze_count() > 1000, gc.isenabled())")
    assert out == "True True True False"


def test_a_command_s_own_process_loads_it_frozen_and_a_caller_s_does_not():
    code = ("import gc\nfrom suites.commands import main\n"
            "try:\n    main(['compare', '--help'], own_process={})\nexcept SystemExit:\n    pass\n"
            "print(gc.get_freeze_count() > 1000, gc.isenabled())")
    assert child(code.format(True)).splitlines()[-1] == "True True"
    assert child(code.format(False)).splitlines()[-1] == "False True"


def test_python_m_suites_ends_with_everything_frozen():
    # an atexit handler runs after run()'s sys.exit and before the interpreter's finalisation: what it sees frozen
    # is what finalisation will not walk (--help loads no command, so only ending() froze it)
    out = child("import atexit, gc, sys\nimport suites.__main__ as entry\n"
                "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 1000))\n"
                "sys.argv = ['suites', '--help']\nentry.run()")
    assert out.splitlines()[-1] == "frozen at exit: True"
