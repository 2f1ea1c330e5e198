"""Every command the documentation marks runnable (a ```bash runnable block in README.md or docs/*.md) runs, at
smoke size, into this test's own store and folders, and exits 0: the pages cannot drift from the product."""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import REPO, STAND_IN_ML, over_width, store_at

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


BLOCK = re.compile(r"^```bash runnable\n(.*?)^```", re.S | re.M)


def runnable() -> list[tuple[str, str]]:
    """(page, command line) for every command line in a runnable block, comments dropped."""
    out = []
    for page in PAGES:
        for block in BLOCK.findall(page.read_text()):
            for line in block.splitlines():
                command = line.split(" #", 1)[0].strip()
                if command and not command.startswith("#"):
                    out.append((page.relative_to(REPO).as_posix(), command))
    return out


def sized(argv: list[str], tmp_path: Path, sizing_store: Path | None = None) -> list[str]:
    """The command at smoke size, writing only under ``tmp`` (a sizing's store under ``sizing_store``, where given);
    a command nobody taught this test fails it."""
    store = [f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", f"artifact_dir={tmp_path / 'artifacts'}"]
    sizing = store if sizing_store is None else [f"tracking_uri={store_at(sizing_store / 'mlflow.db')}",
                                                 f"artifact_dir={sizing_store / 'artifacts'}"]
    bench = ["+preset=smoke", "progress=quiet", *store, f"data.cache_dir={tmp_path / 'data'}",
             f"hydra.run.dir={tmp_path / 'run'}", "data.download=false"]
    if argv[0] == "make":
        extra = {"bench": bench, "gpu-check": [f"out_dir={tmp_path / 'gpu-check'}"],
                 "study": [f"study.out_dir={tmp_path / 'study'}", *store],
                 # a sizing to its answer in under a minute: the docs' own settings first, these after them (one count,
                 # once: the line's parsing and the answer it reaches are what is tested; two counts of two repeats
                 # are tests/e2e/test_size.py's)
                 "size": [f"sizing.out_dir={tmp_path / 'sizing'}", *sizing, f"data.cache_dir={tmp_path / 'data'}",
                          "progress=quiet", "sizing.tier=smoke", "sizing.max_guests=1", "sizing.repeats=1"],
                 "bench-ml": ["--workloads", "mnist-torch", "--rounds", "2", "--set", "+preset=smoke"],
                 # its own throwaway store in the system's temporary folder, removed: windows of a quarter second
                 "bench-harness": ["--window-s", "0.25"]}
        target = argv[1]
        assert target in extra, f"make {target}: give it a smoke size in tests/test_docs.py"
        given = [a for a in argv[2:] if a.startswith("ARGS=")]
        rest = [a for a in argv[2:] if not a.startswith("ARGS=")]
        # a sizing of other CAD users than the plain line's (another mix, users by type) measures consolidations of
        # its own: its ML guest is the 1 ms stand-in (a sizing's real training is the plain line's, which the price
        # line reuses; tests/e2e/test_size.py's sizings have the stand-in too)
        own = STAND_IN_ML if target == "size" and any(k in g for g in given for k in ("sizing.mix", "sizing.users")) \
            else []
        args = " ".join([*(g.split("=", 1)[1] for g in given), *map(shlex.quote, [*extra[target], *own])])
        return ["make", target, *rest, f"ARGS={args}"]
    python = [sys.executable, *argv[1:]] if argv[0] in ("python", "python3", ".venv/bin/python") else argv
    module = python[2] if python[1:2] == ["-m"] else ""
    if module == "suites" and len(python) > 3:  # python -m suites <command>
        module = f"suites {python[3]}"
    if module in ("suites bench", "suites.commands.bench"):
        return [*python, *bench]
    assert module in ("gpu_probe",), f"{' '.join(argv)}: give it a smoke size in tests/test_docs.py"
    return python


CASES = runnable()


# --- the README's output block is what its command prints -------------------------------------------------------
README_COMMAND = "make bench profile=m60-8q"


def readme_output() -> str:
    """The ```text block that follows the README's first runnable command."""
    text = (REPO / "README.md").read_text()
    after = text[text.index(f"```bash runnable\n{README_COMMAND}\n"):]
    start = after.index("```text\n") + len("```text\n")
    return after[start:after.index("```", start)]


def guest_row(output: str) -> dict[str, str]:
    """The results table's g0 row, by header."""
    lines = output.splitlines()
    header = next(ln for ln in lines if ln.startswith("┃ guest"))
    at = next(i for i, ln in enumerate(lines) if ln.startswith("│ g0 "))
    rows = [lines[at]] + [ln for ln in itertools.takewhile(lambda ln: ln.startswith("│       │"), lines[at + 1:])]
    names = [c.strip() for c in header.strip("┃").split("┃")]
    cells = [[c.strip() for c in r.strip("│").split("│")] for r in rows]  # a cell folded over lines, joined
    return dict(zip(names, (" ".join(filter(None, col)) for col in zip(*cells, strict=True)), strict=True))


def number(cell: str) -> float:
    return float(cell.split()[0].rstrip("%").replace(",", ""))


def line_kinds(output: str) -> list[str]:
    """What the lines under the table say, without their figures: 'status', 'host', 'note: guests hold', ..."""
    keep = [ln for ln in output.splitlines() if re.match(r"^(status|host|sampler|note|mlflow):", ln)
            and not ln.startswith("note: g0:")]  # a guest's own note (a warm-up's share) comes and goes with load
    return [" ".join(ln.split(":", 1)[0:1] + ln.split(":", 1)[1].split()[:2]) if ln.startswith("note") else
            ln.split(":", 1)[0] for ln in keep]


def test_the_docs_have_runnable_commands():
    pages = {page for page, _ in CASES}
    assert "README.md" in pages and len(CASES) >= 5, CASES


@pytest.fixture(scope="module")
def sizing_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store for the docs' sizings: a line that measures what an earlier one measured (another price, another
    mix of the same user type) reuses it, as a user's second make size does; each line alone measures it itself."""
    return tmp_path_factory.mktemp("sizing-store")


# a documented make size or make study: a minute or more each, so this module goes first (tests/conftest.py)
SLOW = ("make size", "make study")


@pytest.mark.parametrize("page,command", [pytest.param(p, c, marks=[pytest.mark.slow(minutes=2)] * c.startswith(SLOW))
                                          for p, c in CASES], ids=[f"{p}:{c}" for p, c in CASES])
def test_documented_command_runs(tmp_path: Path, page: str, command: str, sizing_store: Path):
    argv = sized(shlex.split(command), tmp_path, sizing_store)
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "no-real-data")})
    assert proc.returncode == 0, f"{page}: {command}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    if argv[:2] == ["make", "size"]:  # its answer, reached (smoke: inconclusive, said so), within 120 columns
        ours = proc.stdout.split(" suites size\n", 1)[-1]  # after make's echo of its own command
        assert "sizing.html" in ours and over_width(ours) == []
        assert ": inconclusive: " in " ".join(ours.split()) and "smoke sizes" in " ".join(ours.split())
    if argv[:2] == ["make", "bench-ml"]:  # what the issue asked of it: spread and a verdict, like every comparison
        assert "[95% CI]" in proc.stdout and "verdict" in proc.stdout and ("within noise" in proc.stdout
                                                                             or "overhead" in proc.stdout)
    if argv[:2] == ["make", "bench-harness"]:  # its figures with their spread, beside the floors and goals
        assert "cost per repeat after the first (s)" in proc.stdout and "<= 0.5: " in proc.stdout
        assert "floor: an empty Python process" in proc.stdout and "nan" not in proc.stdout
        assert "floor: a process that imports MLflow (s)" in proc.stdout


@pytest.mark.alone
def test_the_readme_output_block_is_what_a_fresh_run_prints(tmp_path: Path):
    """The README's first command, run as a user runs it (full size, not smoke) on this kind of host: it reaches its
    target on the synthetic stand-in, its rate reconciles with its train time, and the README's block shows the
    same table, columns, notes and status. Speeds are compared only within one run (its rate against its own train
    time): a rate measured on the host that wrote the README says nothing of this one (hosts of this kind differ
    3x and more)."""
    store = [f"tracking_uri={store_at(tmp_path / 'mlflow.db')}", f"artifact_dir={tmp_path / 'artifacts'}",
             f"data.cache_dir={tmp_path / 'data'}", f"hydra.run.dir={tmp_path / 'run'}", "data.download=false"]
    proc = subprocess.run([sys.executable, "-m", "suites.commands.bench", *README_COMMAND.split()[2:], *store],
                          cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BENCH_DATA_ROOT": str(tmp_path / "no-real-data")})
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    m = results["guests"][0]["result"]["metrics"]
    assert m["test_accuracy"] >= m["target_accuracy"] == 0.99 and m["target_met"] == 1.0  # the stated target, met
    assert m["timed_steps"] >= 20 and m["images_per_sec"] > 0  # a rate from a window that carries it
    warm = m["train_time_s"] - m["timed_s"]
    assert m["images_per_sec"] * m["timed_s"] + 10 * 512 == pytest.approx(m["images"], rel=1e-6)  # 10 warm-up steps
    assert 0 <= warm < m["train_time_s"]  # train s = warm-up + timed window: images / train s is below the rate
    fresh, shown = guest_row(proc.stdout), guest_row(readme_output())
    assert list(fresh) == list(shown)  # the same columns
    for row in (fresh, shown):
        assert "≥ 99%" in row["test acc"] and number(row["test acc"]) >= 99.0 and row["status"] == "ok"
    for output in (proc.stdout, readme_output()):  # every line, not only the table, fits 120 columns
        assert over_width(output) == []
    # each run's own figures reconcile: images / train s at most its images/s (the warm-up is outside the window)
    images = 24000 // 512 * 512
    for row in (fresh, shown):
        assert images / number(row["train s"]) <= number(row["images/s"]) * 1.05, row
    assert line_kinds(proc.stdout) == line_kinds(readme_output())


# --- every command a page names answers --help, every make target it names exists -----------------------------
CODE = re.compile(r"`([^`\n]+)`|^```[a-z ]*\n(.*?)^```", re.S | re.M)
NAMED = re.compile(r"(?:^|[\s;&(=])(make|python3? -m suites) ([a-z][a-z-]*)")


def named_commands() -> dict[tuple[str, str], list[str]]:
    """(``make`` or ``suites``, target or command) -> the pages that name it in code (a backtick span or a fenced
    block), not in prose ("make it", "make says")."""
    out: dict[tuple[str, str], list[str]] = {}
    for page in PAGES:
        for span, block in CODE.findall(page.read_text()):
            code = span or "\n".join(line.split("#", 1)[0] for line in block.splitlines())  # a comment is prose
            for tool, name in NAMED.findall(code):
                key = ("make" if tool == "make" else "suites", name)
                out.setdefault(key, []).append(page.relative_to(REPO).as_posix())
    return out


HELP_ALL = """
import contextlib, io, json, sys
from suites.commands import COMMANDS, main
said = {}
for name in COMMANDS:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = main([name, "--help"])
    except SystemExit as exc:
        code = exc.code
    said[name] = [code, out.getvalue()]
print(json.dumps(said))
"""


def test_every_command_the_docs_name_exists_and_answers_its_help():
    """Issue 89: a documented command is checked where it can be without running it: each ``python -m suites <c>``
    a page names is a command whose --help exits 0 and says what it runs, and each ``make <target>`` is a target of
    the Makefile that ``make -n`` plans (one process answers every command's --help: 2 s, not 16 starts)."""
    from suites.commands import COMMANDS

    named = named_commands()
    commands = {n for tool, n in named if tool == "suites"}
    targets = {n for tool, n in named if tool == "make"}
    assert {"bench", "gpu-check", "compare"} <= commands and {"bench", "size", "study", "rehearse"} <= targets
    assert {c: named[("suites", c)] for c in commands - set(COMMANDS)} == {}
    proc = subprocess.run([sys.executable, "-c", HELP_ALL], cwd=REPO, capture_output=True, text=True, timeout=120)
    said = json.loads(proc.stdout)
    assert {c: code for c, (code, _) in said.items() if code != 0} == {}
    assert {c: text[:200] for c, (_, text) in said.items()
            if not (f"python -m suites {c}" in text or f"make {c}" in text or "Hydra" in text)} == {}
    own = {t for _, _, t in COMMANDS.values() if t} | {f"make {t}" for t in targets}
    planned = {t: subprocess.run(["make", "-n", t.split()[1]], cwd=REPO, capture_output=True, text=True, timeout=60)
               for t in sorted(own)}
    assert {t: p.stderr.strip()[-300:] for t, p in planned.items() if p.returncode != 0} == {}
