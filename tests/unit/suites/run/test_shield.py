"""Tests of ``suites/run/shield.py``."""

from __future__ import annotations

import os

import pytest


def test_the_third_press_gives_up_what_the_shield_guards():
    """A store that hangs must not trap the user: presses 1 and 2 are noted, the third ends the shielded work
    (in process, so the presses' timing is certain; the bench CLI then says where results.json is)."""
    import signal
    import time

    from suites.run.shield import Shield

    said: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with Shield(said.append, "recording what was measured"):
            for _ in range(3):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler runs between presses
    assert said == ["interrupt noted: recording what was measured first (Ctrl-C 2 more time(s) to give that up)",
                    "interrupt noted: recording what was measured first (Ctrl-C 1 more time(s) to give that up)",
                    "interrupt: 3 times; giving up recording what was measured"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back
    done = []
    with pytest.raises(KeyboardInterrupt):  # no handler of the suite's: the noted press is Python's, once it is down
        with Shield(said.append, "stopping the guests", give_up=None):  # work that must finish: never given up
            for _ in range(4):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
            done.append("the guests stopped")
    assert said[-1] == "interrupt noted: stopping the guests first" and done == ["the guests stopped"]


def test_a_noted_signal_is_owed_to_the_command_once_the_shield_is_down():
    """Round 7: a signal a shield noted was dropped when it came down (nothing read it), so a comparison's next phase,
    a campaign's next part and a sweep's next point ran and the command exited 0. Now the handler the command
    installed keeps it (noted) until the command honours it, whatever shields stood between (nested), and
    stop_on_signals called again (Hydra's task, a campaign's command) keeps it too."""
    import signal
    import time

    from suites.run.shield import SIGNALS, Shield, honour, interrupt_reason, noted, stop_on_signals

    saved = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        stop_on_signals()
        assert noted() is None and honour() is None
        with Shield(lambda line: None, "recording what was measured"):
            with Shield(lambda line: None, "stopping the guests", give_up=None):
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
            assert noted() == signal.SIGTERM  # owed, inside the outer shield too
        stop_on_signals()  # a second install keeps the handler and what it owes
        assert noted() == signal.SIGTERM and interrupt_reason() == "interrupted (SIGTERM)"
        assert honour() == signal.SIGTERM and noted() is None and honour() is None  # taken once
        with pytest.raises(KeyboardInterrupt) as given_up:  # a given-up shield raises it: never owed twice
            with Shield(lambda line: None, "recording", give_up=1):
                os.kill(os.getpid(), signal.SIGHUP)
                time.sleep(0.05)
        assert interrupt_reason(given_up.value).startswith("interrupted (SIGHUP") and noted() is None
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)


def test_a_signal_stays_named_where_a_library_raised_a_bare_keyboardinterrupt_for_it():
    """Ray's wait loops catch the Interrupted the runner's handler raises and raise a bare KeyboardInterrupt: the
    handler remembers which signal it was (in process; tests/test_ray_backend.py has the real ray.wait), and so does
    a shield's, for once it is down. The handlers are put back: the other tests here expect Python's own."""
    import signal
    import time

    from suites.run.shield import SIGNALS, Shield, interrupt_reason, stop_on_signals

    def library_wait(sig: int) -> None:
        try:
            os.kill(os.getpid(), sig)
            time.sleep(1)  # the handler runs here
        except KeyboardInterrupt:
            raise KeyboardInterrupt from None  # what Ray's check_status does with the status it made of it

    saved = {s: signal.getsignal(s) for s in SIGNALS}
    try:
        assert interrupt_reason(KeyboardInterrupt()) == "interrupted (Ctrl-C)"  # no handler of ours: Python's own
        stop_on_signals()
        with pytest.raises(KeyboardInterrupt) as caught:
            library_wait(signal.SIGTERM)
        assert type(caught.value) is KeyboardInterrupt and interrupt_reason(caught.value) == "interrupted (SIGTERM)"
        with Shield(lambda line: None, "stopping the guests", give_up=None):
            os.kill(os.getpid(), signal.SIGHUP)
            time.sleep(0.05)
        assert interrupt_reason() == "interrupted (SIGHUP: the terminal or ssh session hung up)"
        with pytest.raises(KeyboardInterrupt) as caught:
            library_wait(signal.SIGINT)
        assert interrupt_reason(caught.value) == "interrupted (Ctrl-C)"
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
