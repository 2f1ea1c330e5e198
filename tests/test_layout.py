"""The layout of the code and of its tests: the import graph of ``suites`` and ``gpu_probe`` (one direction only,
no circles, no hidden imports), module and function sizes, file names, and a test module for each product module.

Layers, lowest first; a module may import its own layer and the ones below:

    gpu_probe        NVML wrapper, inventory, sampler, statistics, vocabulary (imports nothing of suites)
    suites.errors    the one-line errors
    suites.validity  what a measurement is worth (enforced, emulated, not enforced)
    suites.poll      the one deadline loop
    suites.data      datasets
    suites.workloads workload plugins (found by discovery)
    suites.guest     the guest-side worker and the protocol (nothing of the runner)
    suites.config    schemas and composition
    suites.backends  placement and where guests run (local, Ray, VMs)
    suites.run       plan, execute into a plain-data outcome, comparisons, the mixed/consolidation scenarios
    suites.record    run directory, output folders, MLflow store, reading it back, importing runs
    suites.render    console tables, plots, the mixed/consolidation report
    suites.pipeline  running what a command composed (joins run, record and render); Hydra's task and callback
    suites.campaign  many comparisons under one parent run, as plain data, and the one executor that runs them
    suites.gpucheck  make gpu-check's checks and judges
    suites.study     the reference study (make study): settings, planner, its campaign, results, write-up
    suites.sizing    make size below its command: its plan and campaign, the consolidations read back, the answer
    suites.commands  one module per command: they assemble
    suites.__main__  python -m suites <command>
    suites.makeargs  how the Makefile runs a command with ARGS (split as a shell would, nothing run)

Imports of project modules sit at module level (lazy imports of heavy libraries such as torch,
tensorflow, ray, mlflow, matplotlib, moderngl, pandas stay inside functions).
"""

from __future__ import annotations

import ast
import collections
import functools
from pathlib import Path

import pytest

from tests.support.helpers import REPO

LAYERS = ("gpu_probe", "suites.errors", "suites.validity", "suites.run_kinds", "suites.store_keys", "suites.poll",
          "suites.process_gc", "suites.json_rules", "suites.data",
          "suites.workloads", "suites.guest", "suites.config", "suites.backends", "suites.run", "suites.record",
          "suites.capacity", "suites.render", "suites.bundle", "suites.pipeline", "suites.campaign", "suites.study",
          "suites.sizing", "suites.compare", "suites.publish", "suites.gpucheck", "suites.commands",
          "suites.__main__", "suites.makeargs")
PROJECT = ("suites", "gpu_probe")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 60


def module_files() -> dict[str, Path]:
    out = {}
    for top in PROJECT:
        for path in sorted((REPO / top).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = module_files()


def resolve(name: str) -> str | None:
    """The project module an import names (the longest known prefix), or None for a third-party one."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


class Imports(ast.NodeVisitor):
    """(imported project module, line, inside a function?) for every import statement of a module."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, int, bool]] = []
        self.depth = 0

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def add(self, name: str, line: int) -> None:
        target = resolve(name)
        if target is not None:
            self.found.append((target, line, self.depth > 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.package.split(".")
            base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
        for alias in node.names:  # `from pkg import mod` imports the module pkg.mod
            self.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base, node.lineno)


def imports_of(module: str) -> list[tuple[str, int, bool]]:
    path = MODULES[module]
    visitor = Imports(module, path.name == "__init__.py")
    visitor.visit(ast.parse(path.read_text(), str(path)))
    return [(target, line, inside) for target, line, inside in visitor.found if target != module]


@functools.cache
def graph() -> dict[str, list[tuple[str, int, bool]]]:
    """Each module's imports, parsed when a test first asks (not at collection: every test process collects this
    module, and parsing every module was a second of each one's start)."""
    return {m: imports_of(m) for m in MODULES}


def layer(module: str) -> int:
    matches = [i for i, prefix in enumerate(LAYERS) if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} is in no layer: add it to LAYERS (tests/test_layout.py) and docs/development.md"
    return matches[-1]


def test_every_module_has_a_layer():
    for module in MODULES:
        if module != "suites":  # the namespace package itself
            layer(module)


def test_no_project_import_inside_a_function():
    hidden = [f"{m}:{line} imports {t}" for m, found in graph().items() for t, line, inside in found if inside]
    assert not hidden, "project imports belong at module level:\n" + "\n".join(hidden)


def test_imports_follow_the_layer_order():
    upward = [f"{m}:{line} ({LAYERS[layer(m)]}) imports {t} ({LAYERS[layer(t)]})"
              for m, found in graph().items() if m != "suites" for t, line, _ in found
              if t != "suites" and layer(t) > layer(m)]
    assert not upward, "imports must point down the layer order:\n" + "\n".join(upward)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert cycles({m: {t for t, _, _ in found} for m, found in graph().items()}) == []


def test_the_cycle_finder_sees_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_modules_and_functions_stay_small(module: str):
    text = MODULES[module].read_text()
    assert len(text.splitlines()) <= MAX_MODULE_LINES, f"{module}: split it (> {MAX_MODULE_LINES} lines)"
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long, f"{module}: functions over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"


# Same file name allowed: the same role in sibling packages (each package's __main__, each plugin family's base, and
# the roles of a campaign command below).
SHARED_NAMES = {"__init__.py", "__main__.py", "base.py"}
# A campaign command's package (make study, make size, make compare, make gpu-check) holds the roles that apply to it
# under these names, so learning one command predicts the others; each role file shows its role by what it defines.
CAMPAIGN_PACKAGES = ("suites/study", "suites/sizing", "suites/compare", "suites/gpucheck")
ROLES = {  # file name -> (what it holds, a name it must define: a function, or a class by its ending)
    "command.py": ("the command: main(argv), the module COMMANDS runs", "main"),
    "settings.py": ("its arguments and keys read and checked into one frozen dataclass", "*Settings"),
    "plan.py": ("what it will run, sized, before anything starts", "*Plan"),
    "campaign.py": ("its parts as one campaign for the executor", "campaign_of"),
    "conclude.py": ("what it concluded once its parts ran", "*concluder|compare"),
    "results.py": ("its runs read back from the store", "read*"),
    "report.py": ("its report written (md, html or json) and shown", "write*"),
}


def defines(path: Path, wanted: str) -> bool:
    names = [n.name for n in ast.parse(path.read_text()).body
             if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))]
    for want in wanted.split("|"):
        if want.startswith("*") and any(n.endswith(want[1:]) for n in names):
            return True
        if want.endswith("*") and any(n.startswith(want[:-1]) for n in names):
            return True
        if want in names:
            return True
    return False


def test_no_two_modules_share_a_file_name_but_roles_and_study_is_one_package():
    names = collections.defaultdict(list)
    for top in ("suites", "gpu_probe"):
        for path in (REPO / top).rglob("*.py"):
            names[path.name].append(path.relative_to(REPO).as_posix())
    shared = {n: p for n, p in names.items() if len(p) > 1 and n not in SHARED_NAMES | set(ROLES)}
    assert not shared, shared
    studies = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "suites").rglob("*study*"))
    assert studies == ["suites/study"], studies


def test_every_role_file_of_a_campaign_command_is_where_its_name_says():
    """study/, sizing/, compare/ and gpucheck/ each name their roles alike; a role file defines what its role does
    (a settings.py its *Settings, a conclude.py its concluder), and each package's command is its command.py."""
    from suites.commands import COMMANDS

    wrong = [f"{pkg}/{name}: {what} (defines no {want})" for pkg in CAMPAIGN_PACKAGES
             for name, (what, want) in ROLES.items()
             if (REPO / pkg / name).is_file() and not defines(REPO / pkg / name, want)]
    assert wrong == []
    runs = {module for module, _, _ in COMMANDS.values()}
    assert {f"{pkg.replace('/', '.')}.command" for pkg in CAMPAIGN_PACKAGES} <= runs
    for pkg in CAMPAIGN_PACKAGES:  # every campaign command has its settings, conclusion and report
        assert {"command.py", "settings.py", "conclude.py", "report.py"} <= {p.name for p in (REPO / pkg).iterdir()}
    outside = [f"suites/{m.replace('.', '/')}" for m in runs if not m.startswith(("suites.commands.",))
               and not any(m.startswith(pkg.replace("/", ".") + ".") for pkg in CAMPAIGN_PACKAGES)]
    assert outside == []


def test_the_role_check_sees_a_file_that_does_not_do_its_role(tmp_path: Path):
    (tmp_path / "settings.py").write_text("def split_args(argv):\n    return argv\n")
    (tmp_path / "conclude.py").write_text("class X:\n    pass\n\ndef concluder():\n    pass\n")
    assert not defines(tmp_path / "settings.py", ROLES["settings.py"][1])
    assert defines(tmp_path / "conclude.py", ROLES["conclude.py"][1])


def unfrozen_settings(source: str) -> list[str]:
    """Each class named ``*Settings`` in ``source`` that is not a ``@dataclass(frozen=True)``."""
    def frozen(node: ast.ClassDef) -> bool:
        return any(isinstance(d, ast.Call) and getattr(d.func, "id", getattr(d.func, "attr", "")) == "dataclass"
                   and any(k.arg == "frozen" and getattr(k.value, "value", False) is True for k in d.keywords)
                   for d in node.decorator_list)
    return [n.name for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.ClassDef) and n.name.endswith("Settings") and not frozen(n)]


def test_every_settings_class_is_one_frozen_dataclass():
    """docs/development.md: a command's settings are read once into a frozen dataclass (StudySettings and
    SizingSettings were not: a planner could change a user's setting under the report that quotes it)."""
    found = {m: unfrozen_settings(p.read_text()) for m, p in MODULES.items()}
    assert {m: c for m, c in found.items() if c} == {}
    assert unfrozen_settings("@dataclass\nclass ASettings:\n    x: int = 1\n"
                             "@dataclasses.dataclass(frozen=True)\nclass BSettings:\n    y: int = 1\n") == ["ASettings"]


def markdown_rules(source: str) -> list[str]:
    """Each string in ``source`` that writes a Markdown table's rule row (``| --- |``, ``'---|' * n``): a table
    written by hand."""
    import re

    rule = re.compile(r"^\|?\s*:?-{3,}:?\s*\||^-{3,}\|$")
    return [f"{n.lineno}: {n.value!r}" for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and rule.search(n.value.strip())]


def test_every_markdown_table_is_written_by_render_markdown():
    """suites/render/markdown.py's table() makes each cell one cell (a newline or '|' from a store is shown, never
    a row or a column of its own); the study's and gpu-check's summaries wrote theirs by hand."""
    found = {m: markdown_rules(p.read_text()) for m, p in MODULES.items() if m != "suites.render.markdown"}
    assert {m: f for m, f in found.items() if f} == {}
    assert len(markdown_rules('a = "| --- | --- |"\nb = f"|{\'---|\' * 3}"\nc = "x --- y"\n')) == 2


# What a plan.py may not import: a process, a socket, a clock, the file system's writers, a store, a cluster, the
# console, or the layers that run or record (a plan is decided before anything starts, from what it is given)
PLAN_FORBIDS = ("subprocess", "socket", "tempfile", "shutil", "time", "os", "mlflow", "hydra", "ray", "rich",
                "suites.backends", "suites.record", "suites.pipeline", "suites.run.execute")


def io_imports(source: str) -> list[str]:
    """The modules ``source`` imports that a plan.py may not."""
    names = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return sorted({n for n in names if any(n == f or n.startswith(f + ".") for f in PLAN_FORBIDS)})


def test_every_campaign_plan_is_pure():
    """A plan.py decides what will run from what it is given; sizing/plan.py surveyed a Ray fleet, ran trial runs
    and composed its parts (now sizing/campaign.py's, as the study's are)."""
    plans = {pkg: io_imports((REPO / pkg / "plan.py").read_text()) for pkg in CAMPAIGN_PACKAGES
             if (REPO / pkg / "plan.py").is_file()}
    assert plans and {pkg: found for pkg, found in plans.items() if found} == {}
    assert io_imports("import time\nfrom subprocess import run\nfrom suites.record.store import Tracker\n"
                      "from suites.config.overrides import override\nimport json\n") == [
        "subprocess", "suites.record.store", "time"]


def test_no_command_imports_another_command():
    from suites.commands import COMMANDS

    commands = {module for module, _, _ in COMMANDS.values()}
    reach = {m: [t for t, _, _ in graph()[m] if t in commands] for m in MODULES if m in commands}
    assert {m: t for m, t in reach.items() if t} == {}


SURFACED = ("suites.campaign", "suites.study", "suites.sizing", "suites.gpucheck", "suites.compare", "suites.publish",
            "suites.bundle")  # the campaign packages and the ones they share: each reached through its __init__ only


def reached_inside(module: str, imports: list[tuple[str, int, bool]]) -> list[str]:
    """The internal modules of a surfaced package (one ``module`` is not in) that ``imports`` reach."""
    return [f"{line}: {target}" for target, line, _ in imports for pkg in SURFACED
            if target.startswith(pkg + ".") and not (module == pkg or module.startswith(pkg + "."))]


def outside_all(source: str, module: str = "") -> list[str]:
    """Names imported from a surfaced package (not ``module``'s own) that its ``__all__`` does not list."""
    import importlib

    found = []
    for node in ast.walk(ast.parse(source)):
        own = node.module == module or module.startswith(f"{node.module}.") if isinstance(node, ast.ImportFrom) else 1
        if isinstance(node, ast.ImportFrom) and node.module in SURFACED and not node.level and not own:
            listed = set(importlib.import_module(node.module).__all__)
            found += [f"{node.lineno}: {node.module}.{a.name}" for a in node.names if a.name not in listed]
    return found


def test_a_campaign_package_is_reached_through_its_init_only():
    """Issue 89: a module imports another package only through that package's ``__init__`` (its ``__all__``), never
    its internals: publish reached into compare's lookup and results and study's plan, commands/report into study's
    report and results, commands/rehearse into gpucheck's campaign and rehearsal, the studies into campaign.costs."""
    inside = {m: reached_inside(m, graph()[m]) for m in MODULES}
    assert {m: found for m, found in inside.items() if found} == {}
    unlisted = {m: outside_all(p.read_text(), m) for m, p in MODULES.items()}
    assert {m: found for m, found in unlisted.items() if found} == {}
    assert reached_inside("suites.publish.site", [("suites.compare.lookup", 3, False), ("suites.compare", 4, False),
                                                  ("suites.publish.rules", 5, False)]) == ["3: suites.compare.lookup"]
    assert outside_all("from suites.study import read_study, plan_study\n", "suites.publish.x") == [
        "1: suites.study.plan_study"]
    assert outside_all("from suites.study import plan_study\n", "suites.study.command") == []


INTERNAL_IMPORTS = REPO / "tests" / "golden" / "internal_imports.json"


def lower_reach() -> list[str]:
    """``importer -> module`` for every import of a lower package's own module (``suites.config.compose``) from
    outside that package: the packages below the campaign ones, not yet reached through an ``__init__``."""
    found = set()
    for m in MODULES:
        for target, _, _ in graph()[m]:
            pkg = ".".join(target.split(".")[:2])
            if (target.count(".") >= 2 and target.startswith("suites.") and pkg not in SURFACED
                    and not (m == pkg or m.startswith(pkg + "."))):
                found.add(f"{m} -> {target}")
    return sorted(found)


def test_no_new_reach_into_a_lower_packages_modules():
    """Issue 89 drew the line at the campaign packages (above); the lower ones (config, record, run, workloads and
    kin: some 290 imports of their modules) are listed in tests/golden/internal_imports.json as they were, and the
    list only shrinks: a new import of another package's module fails here, and so does a listed one that is gone
    (take it off). A package that gains an ``__all__`` joins SURFACED and leaves the list."""
    import json

    listed, now = json.loads(INTERNAL_IMPORTS.read_text()), lower_reach()
    new = "a new import of another package's module: reach it through the package's __init__"
    assert sorted(set(now) - set(listed)) == [], new
    assert sorted(set(listed) - set(now)) == [], "gone: take these off tests/golden/internal_imports.json"


def store_key_literals(source: str) -> list[str]:
    """Strings in code that spell a ``bench.*`` store key (``"bench.kind"``, ``f"bench.verdict.{x}"``, a search's
    ``tags.`bench.kind```), not a docstring's mention nor a VM's kernel argument (``bench.boot=``)."""
    import re

    key = re.compile(r"^bench\.[a-z_]+(\.|$)|`bench\.")
    tree, found = ast.parse(source), []
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    docs |= {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}  # judged as one
    for node in ast.walk(tree):
        if id(node) in docs:
            continue
        if isinstance(node, ast.JoinedStr):
            head = node.values[0] if node.values else None
            if isinstance(head, ast.Constant) and isinstance(head.value, str) and key.search(head.value):
                found.append(f"{node.lineno}: f{head.value!r}...")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and key.search(node.value):
            found.append(f"{node.lineno}: {node.value!r}")
    return sorted(found)


def test_every_store_key_is_spelled_in_store_keys_only():
    """The store's schema in one module (suites/store_keys.py): no ``bench.*`` tag literal anywhere else."""
    spelled = {m: store_key_literals(p.read_text()) for m, p in MODULES.items() if m != "suites.store_keys"}
    assert {m: f for m, f in spelled.items() if f} == {}
    assert store_key_literals('x = {"bench.kind": 1}\ny = f"bench.verdict.{p}"\nz = "tags.`bench.kind` = 1"\n'
                              'def f():\n    """``bench.kind``, a docstring"""\n'
                              'q = "quiet bench.boot=1 bench.probe=1"') == \
        ["1: 'bench.kind'", "2: f'bench.verdict.'...", "3: 'tags.`bench.kind` = 1'"]


def role_kind_literals(source: str) -> list[str]:
    """A ROLE or KIND value spelled as a literal: ``{keys.ROLE: "guest"}``, ``tags.get(keys.KIND) == "study"``."""
    def is_key(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr in ("ROLE", "KIND")

    def is_text(node: ast.AST) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str)

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict):
            found += [f"{v.lineno}: {v.value!r}" for k, v in zip(node.keys, node.values, strict=True)
                      if k is not None and is_key(k) and is_text(v)]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            reads = any(isinstance(s, ast.Call) and s.args and is_key(s.args[0]) for s in sides)
            found += [f"{s.lineno}: {s.value!r}" for s in sides if reads and is_text(s)]
    return found


def test_every_role_value_is_spelled_in_store_keys_only():
    """A run's ROLE and KIND values (guest, scenario, study, sizing, gpu-check, compare...) beside their keys in
    suites/store_keys.py and suites/run_kinds.py, as mlperf_logging keeps its values: no literal of one elsewhere."""
    spelled = {m: role_kind_literals(p.read_text()) for m, p in MODULES.items() if m != "suites.store_keys"}
    assert {m: f for m, f in spelled.items() if f} == {}
    assert role_kind_literals('t = {keys.ROLE: "guest", keys.SCENARIO: "x"}\nok = r.tags.get(keys.KIND) == "study"\n'
                              'fine = {keys.ROLE: keys.GUEST}') == ["1: 'guest'", "2: 'study'"]


def kind_literals(source: str) -> list[str]:
    """A run kind spelled as a literal where a kind is meant: compared with, given as, or set to anything whose name
    says *kind* (``self.kind == "mixed"``, ``doc["run"]["kind"] in ("study", "sizing")``, ``{"kind": "published"}``,
    ``KINDS = ("plain", ...)``, ``Campaign(kind="study")``)."""
    from suites.run_kinds import RunKind

    words = {k.value for k in RunKind}

    def says_kind(node: ast.AST | None) -> bool:
        name = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                else node.value if isinstance(node, ast.Constant) and isinstance(node.value, str)
                else node.slice if isinstance(node, ast.Subscript) else None)
        return says_kind(name) if isinstance(name, ast.AST) else isinstance(name, str) and "kind" in name.lower()

    def kinds_in(node: ast.AST) -> list[str]:
        texts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return [f"{t.lineno}: {t.value!r}" for t in texts
                if isinstance(t, ast.Constant) and isinstance(t.value, str) and t.value in words]

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(says_kind(s) for s in [node.left, *node.comparators]):
            found += [k for s in [node.left, *node.comparators] for k in kinds_in(s)]
        elif isinstance(node, ast.Dict):
            found += [k for key, v in zip(node.keys, node.values, strict=True) if says_kind(key) for k in kinds_in(v)]
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found += [k for t in targets if says_kind(t) and node.value is not None for k in kinds_in(node.value)]
            pairs = [(t, node.value) for t in targets if isinstance(t, ast.Name)] + [
                p for t in targets if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple)
                for p in zip(t.elts, node.value.elts, strict=False)]  # BENCH, STUDY = "bench", ...: a kind's own name
            found += [k for t, v in pairs if isinstance(t, ast.Name) and t.id in RunKind.__members__
                      for k in kinds_in(v)]
        elif isinstance(node, ast.keyword) and node.arg and "kind" in node.arg:
            found += kinds_in(node.value)
    return found


def test_every_run_kind_is_spelled_in_run_kinds_only():
    """Issue 89: one definition of each run kind (suites/run_kinds.py's RunKind); compare's, publish's and the
    scenario config's own tuples of them were literals."""
    spelled = {m: kind_literals(p.read_text()) for m, p in MODULES.items() if m != "suites.run_kinds"}
    assert {m: f for m, f in spelled.items() if f} == {}
    assert sorted(kind_literals('if self.kind == "mixed": pass\nok = doc["run"]["kind"] in ("study", "x")\n'
                         'd = {"kind": "published"}\nKINDS = ("plain", "bench")\nc = Campaign(kind="sizing")\n'
                         'fine = cfg.scenario.name == "mixed"\nkind: str = "plain"\n'
                         'BENCH, X = "bench", "mixed"\n')) == sorted([
        "1: 'mixed'", "2: 'study'", "3: 'published'", "4: 'plain'", "4: 'bench'", "5: 'sizing'", "7: 'plain'",
        "8: 'bench'"])


def kind_names(source: str) -> list[str]:
    """The names ``source`` binds that say *kind*: a variable, an argument, a function, a class or a field."""
    out = []
    for node in ast.walk(ast.parse(source)):
        name = (node.id if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) else node.arg
                if isinstance(node, ast.arg) else node.name if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                else node.attr if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) else "")
        out += [f"{node.lineno}: {name}"] if "kind" in name.lower() else []
    return out


NOT_A_RUN_KIND = {  # a module that names something *kind* without reading run kinds, and why that is the same word
    "suites.config.profiles": "profile.kind: gpu_access's old name, read for a release and said (issue 75)",
}


def test_no_identifier_says_kind_but_for_a_run_kind():
    """One word, one idea: *kind* is a run's kind (docs/development.md), so a module that names something *kind*
    reads run kinds (suites/run_kinds.py or store_keys). A PNG chunk's type, an exception's type, the device a phase
    runs on, a mark and a process's command were each called *kind* in modules that read none."""
    reads = ("suites.run_kinds", "suites.store_keys", "from suites import store_keys")
    named = {m: kind_names(p.read_text()) for m, p in MODULES.items()
             if m not in (*NOT_A_RUN_KIND, "suites.run_kinds") and not any(r in p.read_text() for r in reads)}
    assert {m: n for m, n in named.items() if n} == {}
    assert kind_names("def f(kind):\n    for chunk_kind, x in y: pass\nfine = a.kind\n") == ["1: kind", "2: chunk_kind"]


def test_capacity_is_pure_it_imports_nothing_but_capacity_validity_errors_and_statistics():
    """docs/development.md calls the package pure: no configs read, no fleet, no store, statistics from
    gpu_probe.stats (what reads a fleet or a run is sizing/'s)."""
    pure = [m for m in MODULES if m.startswith("suites.capacity.")]
    assert len(pure) >= 7
    allowed = ("suites.capacity", "suites.validity", "suites.errors", "gpu_probe.stats")
    reach = {m: [t for t, _, _ in graph()[m] if t.startswith(PROJECT) and not t.startswith(allowed)] for m in pure}
    assert {m: t for m, t in reach.items() if t} == {}


def test_mlflows_client_is_used_in_record_only():
    """Every read of the suite's store through record/'s typed reader (StoreReader), every write through the Recorder
    or record/'s own functions: no MlflowClient elsewhere in suites/ (gpu_probe's selfmeasure_sampler times MLflow's
    own system-metrics monitor, its peer, on a throwaway store of its own)."""
    users = sorted(m for m, p in MODULES.items()
                   if m.startswith("suites.") and not m.startswith("suites.record") and "MlflowClient" in p.read_text())
    assert users == []


def test_no_function_takes_a_base_directory():
    for top in ("suites", "gpu_probe"):
        for path in (REPO / top).rglob("*.py"):
            assert "base_dir" not in path.read_text(), path


# --- tests mirror the code ---------------------------------------------------------------------------------------
# A product module's tests: tests/unit/<its path>/test_<module>.py, or, for one that is a command or runs only as a
# process, tests/e2e/test_<module>.py. The modules below have none of their own, each for the reason given.
WITHOUT_TEST_MODULE = {
    # types and abstract bases: what they declare is exercised by every module that implements or passes them
    "gpu_probe/shapes.py", "suites/backends/base.py",
    # self-measurements of the harness (make bench-vm, make bench-sampler): their tests are the benchmarks' own runs
    # (e2e/test_vm.py, e2e/test_sampler.py), which time what a test module of their own could only restate
    "suites/commands/selfmeasure_vm.py", "gpu_probe/selfmeasure_sampler.py",
    # workload plugins: run as guests by e2e/test_workloads_smoke.py, e2e/test_workloads_tf.py, e2e/test_graphics.py
    "suites/workloads/cifar10_torch.py", "suites/workloads/mnist_torch.py",
    "suites/workloads/cuda_probe.py", "suites/workloads/fixed_step.py", "suites/workloads/idle.py",
    "suites/workloads/memory_fill.py", "suites/workloads/keras_models.py", "suites/workloads/keras_net.py",
    "suites/workloads/graphics/renderer.py", "suites/workloads/graphics/viewsets.py",
    # the VM image's Debian packages: fetched only by make setup-vm (e2e/test_vm.py, e2e/test_vm_driver.py)
    "suites/backends/vm/apt.py",
}


def product_modules() -> list[Path]:
    return [p for top in ("suites", "gpu_probe") for p in sorted((REPO / top).rglob("*.py"))
            if p.stem not in ("__init__", "__main__") and "__pycache__" not in p.parts]


def command_name(rel: Path) -> str:
    """The command a command.py runs ('size' for suites/sizing/command.py), else the module's own stem."""
    from suites.commands import COMMANDS

    if rel.stem != "command":
        return rel.stem
    dotted = ".".join(rel.with_suffix("").parts)
    return next((name.replace("-", "_") for name, (m, _, _) in COMMANDS.items() if m == dotted), rel.stem)


def own_tests(path: Path) -> list[Path]:
    rel = path.relative_to(REPO)
    role = rel.parent.as_posix() in CAMPAIGN_PACKAGES and rel.name in ROLES and rel.stem != "command"
    e2e = [] if role else [REPO / "tests" / "e2e" / f"test_{command_name(rel)}.py"]  # a role's e2e is its command's
    return [t for t in (REPO / "tests" / "unit" / rel.parent / f"test_{rel.stem}.py", *e2e) if t.is_file()]


def test_every_product_module_has_a_test_module_of_its_own_or_says_why_not():
    missing = [p.relative_to(REPO).as_posix() for p in product_modules() if not own_tests(p)]
    unlisted = sorted(set(missing) - WITHOUT_TEST_MODULE)
    assert not unlisted, f"no tests/unit/<path>/test_<module>.py (or tests/e2e/test_<module>.py) for: {unlisted}"
    stale = sorted(m for m in WITHOUT_TEST_MODULE if m not in missing)
    assert not stale, f"on the list but has a test module (or is gone): {stale}"


def test_the_tests_folder_holds_tiers_and_support_only():
    top = sorted(p.name for p in (REPO / "tests").glob("test_*.py"))
    assert top == ["test_layout.py"], top
    unit = [p for p in (REPO / "tests" / "unit").rglob("test_*.py")]
    for t in unit:  # each unit test module mirrors a product module's path (or a package's __init__: test_init)
        rel = t.relative_to(REPO / "tests" / "unit")
        stem = t.stem[len("test_"):]
        folder = REPO / rel.parent
        assert (folder / f"{stem}.py").is_file() or (stem == "init" and (folder / "__init__.py").is_file()), rel
    # make test's last step collects tests/e2e only for the tests marked alone (collecting the unit tier too took
    # 7 s of that one-process step): an alone test elsewhere would never run
    alone = [p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("*.py")
             if "pytest.mark.alone" in p.read_text() and p != Path(__file__)]
    assert alone and all(p.startswith("tests/e2e/") for p in alone), alone


# --- docs name files that exist -----------------------------------------------------------------------------------
TOPS = ("suites/", "gpu_probe/", "tests/", "docs/", "configs/", ".ci/", "notebooks/")
NOT_OURS = {"version.py", "build_info.py"}  # torch's and TensorFlow's own files, named by docs/vm.md


def doc_paths(text: str) -> list[tuple[int, str, str]]:
    """(line, the path as written, the package the line is about) for every file of the project a doc names in
    backticks: a path from the repository's top (``suites/run/plan.py``, ``configs/sizing/default.yaml``) or a
    module (``plan.py``, ``run/plan.py``) that the line's own package (its first ``suites/<pkg>/``) holds."""
    import re

    token = re.compile(r"`([\w./-]+\.(?:py|md|yaml|json|sh|toml))(?:::[\w\[\]-]+)?`")
    package = re.compile(r"`((?:suites|gpu_probe|tests)/[\w/]*)/?`")
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        pkg = package.search(line)
        for m in token.finditer(line):
            name = m.group(1)
            if name.startswith(TOPS) or name.endswith(".py"):
                found.append((n, name, pkg.group(1).rstrip("/") if pkg else ""))
    return found


def exists(name: str, pkg: str) -> bool:
    if name.startswith(TOPS):
        return (REPO / name).exists()
    if name in NOT_OURS:
        return True
    roots = [REPO / "suites", REPO / "gpu_probe", REPO / "tests", REPO / "tests" / "unit" / "suites"]
    if pkg:
        roots.insert(0, REPO / pkg)
    return any((root / name).exists() or any(root.rglob(name)) for root in roots if root.is_dir())


def test_every_file_a_doc_names_exists():
    """A doc that names a module, test or config that is not there (renamed, merged, never written) misleads the
    next reader: README.md and docs/ checked for every backticked file of the project."""
    docs = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    stale = [f"{doc.relative_to(REPO)}:{n}: {name}" for doc in docs
             for n, name, pkg in doc_paths(doc.read_text()) if not exists(name, pkg)]
    assert stale == []


def test_the_doc_path_check_sees_a_renamed_module():
    text = "| `suites/sizing/` | `plan.py`, `read.py` |\nsee `suites/study/writeup.py` and `results.json`"
    found = doc_paths(text)
    assert [name for _, name, _ in found] == ["plan.py", "read.py", "suites/study/writeup.py"]
    assert [name for _, name, pkg in found if not exists(name, pkg)] == ["read.py", "suites/study/writeup.py"]

