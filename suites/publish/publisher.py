"""``make publish``'s work: a run read back from its store (the run a person launched: a bench run, a comparison, a
mixed run or consolidation, a study, a sizing), its plots from its run directory, judged by the run rules, written as
one bundle; and a bundle's command as a person reruns it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from suites import store_keys as keys
from suites.bundle import Bundle, write
from suites.compare import RunFigures, figures_of, host_of, scenario_of
from suites.publish import rerunnable, rules
from suites.publish.document import LOCAL, document
from suites.record.store_reader import StoreReader
from suites.run_kinds import MEASURED

__all__ = ["MAX_PLOTS", "bundle_name", "public_command", "publish", "rerun_command"]

MAX_PLOTS = 12
RERUN = ("bench", "study", "size")  # the commands that measure: what a rerun may run
# a command's module run directly (python -m suites.study.command ...) as python -m suites names it
MODULES = {"suites.commands.bench": "bench", "suites.study.command": "study", "suites.sizing.command": "size"}
LOCAL_ARG = re.compile(r"^[+~]*[\w.]*(uri|dir|root|path|_file|out)=", re.I)  # a key that names a place


def publish(store: StoreReader, experiment: str, given: str, out_dir: Path) -> tuple[Path, list[rules.Verdict]]:
    """The bundle of ``given`` (a run id or run directory) in ``out_dir``; and the rules' verdicts on it."""
    figures = figures_of(store, experiment, given)
    run = figures.run
    figures.setup = {**host_of(store, run.run_id), **figures.setup}  # a campaign's own run holds no host
    run_dir = Path(run.tags.get(keys.RUN_DIR, "")) if run.tags.get(keys.RUN_DIR) else None
    plots = plots_of(run_dir)
    scenario = scenario_of(figures) if figures.kind in MEASURED else figures.kind
    doc = document(figures, public_command(run.tags.get(keys.COMMAND, ""), figures), sorted(plots), scenario)
    verdicts = rules.judge(doc)
    doc["compliance"] = {"verdict": rules.verdict_of(verdicts), "rules": [v.as_dict() for v in verdicts]}
    return write(doc, plots, out_dir / bundle_name(figures)), verdicts


def bundle_name(figures: RunFigures) -> str:
    safe = file_name(f"{figures.kind}-{figures.run.name}", 80) or "run"
    return f"{safe}-{figures.run.run_id[:8]}.bundle.tar.gz"


def file_name(text: str, most: int) -> str:
    """``text`` as a file name a bundle may hold (schema.json's plot pattern): runs of other characters as '-'."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:most].strip("-.")


def plots_of(run_dir: Path | None) -> dict[str, bytes]:
    """Its run directory's plots (the folder's own, then its phases'), at most MAX_PLOTS; none where the folder is
    not on this machine."""
    if run_dir is None or not run_dir.is_dir():
        return {}
    found = sorted(run_dir.glob("*.png")) + sorted(run_dir.glob("*/*.png"))
    out = {}
    for png in found[:MAX_PLOTS]:
        name = file_name(str(png.relative_to(run_dir).with_suffix("")), 70)
        data = png.read_bytes()
        if name and data.startswith(b"\x89PNG") and len(data) < 4 * 2**20:
            out[f"plots/{name}.png"] = data
    return out


def public_command(recorded: str, figures: RunFigures) -> str:
    """The recorded command line without what names this machine (its store, its folders, its data), said; a run
    recorded before commands were: its kind's make target, said to be incomplete."""
    if not recorded:
        target = {"study": "make study", "sizing": "make size"}.get(figures.kind, "make bench")
        return f"{target} (the run's own command was not recorded: its set-up is in the bundle)"
    try:
        words = shlex.split(recorded)
    except ValueError:
        return "(the recorded command could not be read)"
    if words[:2] == ["python", "-m"] and len(words) > 2 and words[2] in MODULES:
        words[2:3] = ["suites", MODULES[words[2]]]
    kept = [w for w in words if not (LOCAL_ARG.match(w) or LOCAL.search(w.split("=", 1)[-1]))]
    keys = dict.fromkeys(k for w in words if w not in kept and re.fullmatch(r"[\w.]+", k := w.split("=", 1)[0]
                                                                              .lstrip("+~")))
    dropped = len(words) - len(kept)
    return shlex.join(kept) + (f"  # {dropped} argument(s) naming local paths or stores left out"
                               + (f": {', '.join(keys)}" if keys else "") if dropped else "")


def rerun_command(bundle: Bundle) -> list[str]:
    """The bundle's command as an argument list this suite runs (``python -m suites <command> <overrides>``, never
    a shell), or a ValueError saying why it is not one: a bundle is data, its command is checked like any input."""
    text = bundle.doc["command"].split("  # ", 1)[0]
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"its command is not a command line ({exc})") from None
    if words[:3] != ["python", "-m", "suites"] or len(words) < 4:
        raise ValueError(f"its command {text[:120]!r} is not 'python -m suites <command> ...'")
    if words[3] not in RERUN:
        raise ValueError(f"its command runs {words[3][:40]!r}: a rerun runs {', '.join(RERUN)}")
    return [words[3], *rerunnable.screened(words[4:])]
