"""What a runner owes its store, noted where the next command on that store finds it if the runner is killed.

A runner ended outright (Slurm's SIGKILL once its KillWait is over, the OOM killer, ``kill -9``) writes nothing more:
its run directory may hold results.json while the store holds no run at all, and a comparison's or a campaign's
run stays RUNNING for ever. So a runner notes in a ledger (``<state>/records/``, beside the leftovers of
suites/backends/leftovers.py) each record it will owe: a scenario run, before its guests start (its run directory,
name, tags and the run it nests under), and each run it has started and must end. Paid, the note goes.

The next command that opens the same store (a bench run, a campaign, ``make compare``, ``make report``,
``python -m suites sync``) pays what runners no longer running left owed, one line each: a scenario run is
recorded from its run directory, KILLED with the reason (a half-recorded one is replaced); a started run still
RUNNING is ended KILLED, with every run nested under it.

The ledger is the user's own (``<state>/records-<uid>/``, 0700) and its notes are still data: a note is read as
suites/backends/leftovers.py reads one; a scenario note is taken only where its run directory is one the suite
wrote (its config.yaml, owned by this user) and each guest in its results.json has a guest's id (no ``../``: a log
outside the run directory never reaches the artifact store); a note naming a run or run directory that a live
runner's note also names is skipped (that run is not owed: it is running).
"""

from __future__ import annotations

import fcntl
import os
import re
import stat
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from gpu_probe.shapes import JsonObject
from suites import store_keys as keys
from suites.backends.leftovers import Ledger, alive
from suites.config.paths import absolute_uri, launch_dir
from suites.config.schema import ARTIFACT_DIR
from suites.errors import first_line, redact
from suites.record import mlflow_runs, rundir
from suites.record.store import Tracker, sqlite_path
from suites.record.store_reader import StoreReader

LEDGER = Ledger("records", per_user=True)  # a user's own runs, owed to that user's stores: 0700, never shared
GUEST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
Say = Callable[[str], None]


def killed_reason(facts: JsonObject) -> str:
    return (f"the runner (pid {facts.get('pid')}) was ended before it recorded this run (killed outright: Slurm's "
            "SIGKILL after its KillWait, the OOM killer, kill -9; or its recording given up)")


def owe_scenario(at: tuple[str, str], run_dir: Path, name: str, parent: str | None, tags: dict[str, str]) -> str:
    """Note a scenario run owed to the store and experiment ``at``; the note's key (for :func:`paid`)."""
    key = f"scenario-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    LEDGER.note(key, what="scenario", uri=redact(at[0]), experiment=at[1], run_dir=str(run_dir.resolve()),
                name=name, parent=parent, tags=tags)
    return key


def owe_end(t: Tracker, run_id: str) -> str:
    """Note a started run ``t``'s store holds RUNNING until this runner ends it; the note's key."""
    key = owe_key(run_id)
    LEDGER.note(key, what="run", uri=redact(t.uri), experiment=t.experiment, run_id=run_id)
    return key


def owe_key(run_id: str) -> str:
    return f"run-{run_id}"


def paid(key: str | None) -> None:
    if key:
        LEDGER.forget(key)


@contextmanager
def collecting() -> Iterator[bool]:
    """One process at a time collects (another that is already doing so: False, and this one leaves it)."""
    LEDGER.prepare()
    with (LEDGER.folder / ".lock").open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def collect(at: tuple[str, str], tracker: Callable[[], Tracker], say: Say) -> int:
    """Pay what runners no longer running owed the store and experiment ``at`` (``tracker`` opens it, only when
    there is some); how many records it paid. A store that fails leaves the note for the next command, said."""
    orphans = LEDGER.orphans()
    for key, facts in orphans:  # a local store removed since (a rehearsal's temporary one): nothing to record into
        db = sqlite_path(str(facts.get("uri", "")))
        if db is not None and not db.exists():
            LEDGER.forget(key)
    live = {str(facts.get(k)) for _, facts in LEDGER.notes() if alive(facts) for k in ("run_id", "run_dir")
            if facts.get(k)}
    owed = [(key, facts) for key, facts in orphans
            if (facts.get("uri"), facts.get("experiment")) == (redact(at[0]), at[1])
            and not live & {str(facts.get("run_id")), str(facts.get("run_dir"))}]
    if not owed:
        return 0
    done = 0
    with collecting() as mine:
        if not mine:
            return 0
        t = tracker()
        for key, facts in sorted(owed, key=lambda kf: kf[1].get("what") != "scenario"):  # scenarios first
            if not (LEDGER.folder / key).is_file():  # paid meanwhile
                continue
            refused = unsound(facts)
            if refused:  # a note that is no runner's: forgotten, said, nothing recorded from it
                LEDGER.forget(key)
                say(f"warning: a note in {LEDGER.folder} not taken ({refused}): forgotten")
                continue
            try:
                said = record_scenario(t, facts) if facts.get("what") == "scenario" else end_run(t, facts)
            except Exception as exc:  # noqa: BLE001 - the note stays for the next command
                say(f"warning: what a killed runner owed {redact(at[0])} not recorded yet ({first_line(exc)})")
                continue
            LEDGER.forget(key)
            done += 1
            say(said)
    return done


def unsound(facts: JsonObject) -> str:
    """'' where a note is one a runner of this user's wrote, else why not: a scenario's run directory must be one the
    suite made (its config.yaml, this user's), its guests' ids plain names; a run note names a run id."""
    if facts.get("what") == "run":
        return "" if re.fullmatch(r"[0-9a-f]{32}", str(facts.get("run_id", ""))) else "no run id"
    run_dir = Path(str(facts.get("run_dir", "")))
    try:
        config = os.lstat(run_dir / "config.yaml")
    except OSError:
        return f"{str(run_dir)[:120]} is no run directory (no config.yaml)"
    if not run_dir.is_absolute() or config.st_uid != os.geteuid() or not stat.S_ISREG(config.st_mode):
        return f"{str(run_dir)[:120]} is no run directory of this user's"
    results = rundir.read_json(run_dir / "results.json")
    ids = [str(g.get("spec", {}).get("guest_id", "")) for g in (results or {}).get("guests", [])
           if isinstance(g, dict)]
    bad = [i for i in ids if not GUEST_ID.match(i)]
    return f"guest id {bad[0][:60]!r} is no guest's" if bad else ""


def record_scenario(t: Tracker, facts: JsonObject) -> str:
    """The scenario run of a killed runner, from its run directory: KILLED, the reason in ``bench.failure``."""
    run_dir, why = Path(str(facts["run_dir"])), killed_reason(facts)
    done = recorded(t, run_dir)
    if done is not None:
        return f"recorded: {run_dir} was already recorded as run {done} before its runner was killed"
    outcome = rundir.read_results(run_dir)
    if outcome is None:
        outcome = rundir.nothing_measured(run_dir, "killed before results.json was written: nothing measured kept")
    outcome.status = "interrupted"
    outcome.reasons.append(why)
    config = rundir.read_config(run_dir)
    parent = facts.get("parent")
    run_id = mlflow_runs.scenario_run(outcome, t, mlflow_runs.config_params(config), run_dir,
                                      mlflow_runs.Named(str(facts["name"]), parent if exists(t, parent) else None,
                                                        dict(facts.get("tags") or {})))
    return f"recorded: {run_dir}: {why}; recorded from its run directory as KILLED run {run_id}"


def recorded(t: Tracker, run_dir: Path) -> str | None:
    """The store's whole scenario run of ``run_dir``, if one was recorded; a half-recorded one (RUNNING: the kill
    landed while it was being written) is deleted with the guest runs it had begun, to be recorded whole."""
    found = [r for r in StoreReader(t.uri).in_dir(t.experiment, str(run_dir))
             if r.tags.get(keys.ROLE) == keys.SCENARIO_RUN]
    for run in found:
        if run.status != "RUNNING":
            return run.run_id
        t.delete_tree(run.run_id)
    return None


def exists(t: Tracker, run_id: object) -> bool:
    if not run_id:
        return False
    try:
        t.client.get_run(str(run_id))
        return True
    except Exception:  # noqa: BLE001 - not in this store
        return False


def end_run(t: Tracker, facts: JsonObject) -> str:
    """A run a killed runner started and never ended: KILLED with the reason, and every run still RUNNING under
    it; one it did end stays as it is."""
    run_id, why = str(facts["run_id"]), killed_reason(facts)
    if not exists(t, run_id) or t.client.get_run(run_id).info.status != "RUNNING":
        return f"recorded: run {run_id}: ended before its runner was killed"
    t.end_running_under(run_id, why)
    t.tag(run_id, keys.STOPPED, why)
    t.end(run_id, "KILLED")
    return f"recorded: run {run_id} was left RUNNING: {why}; ended KILLED"



def collect_into(uri: str, experiment: str, say: Say) -> int:
    """:func:`collect` for a command that reads the store (sync, compare, report): the store opened only if some
    record is owed to it."""
    uri = absolute_uri(uri, launch_dir())  # as the runner noted it
    return collect((uri, experiment), lambda: Tracker(uri, experiment, launch_dir() / ARTIFACT_DIR), say)
