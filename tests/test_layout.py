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
from pathlib import Path

import pytest

from tests.support.helpers import REPO

LAYERS = ("gpu_probe", "suites.errors", "suites.validity", "suites.store_keys", "suites.poll", "suites.data",
          "suites.workloads", "suites.guest", "suites.config", "suites.backends", "suites.run", "suites.record",
          "suites.capacity", "suites.render", "suites.pipeline", "suites.campaign", "suites.gpucheck", "suites.study",
          "suites.sizing", "suites.changes", "suites.commands",
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


GRAPH = {m: imports_of(m) for m in MODULES}


def layer(module: str) -> int:
    matches = [i for i, prefix in enumerate(LAYERS) if module == prefix or module.startswith(prefix + ".")]
    assert matches, f"{module} is in no layer: add it to LAYERS (tests/test_layout.py) and docs/development.md"
    return matches[-1]


def test_every_module_has_a_layer():
    for module in MODULES:
        if module != "suites":  # the namespace package itself
            layer(module)


def test_no_project_import_inside_a_function():
    hidden = [f"{m}:{line} imports {t}" for m, found in GRAPH.items() for t, line, inside in found if inside]
    assert not hidden, "project imports belong at module level:\n" + "\n".join(hidden)


def test_imports_follow_the_layer_order():
    upward = [f"{m}:{line} ({LAYERS[layer(m)]}) imports {t} ({LAYERS[layer(t)]})"
              for m, found in GRAPH.items() if m != "suites" for t, line, _ in found
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
    assert cycles({m: {t for t, _, _ in found} for m, found in GRAPH.items()}) == []


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


# Same file name allowed: the same role in sibling packages (each package's __main__, each plugin family's base).
SHARED_NAMES = {"__init__.py", "__main__.py", "base.py"}


def test_no_two_modules_share_a_file_name_and_study_is_one_package():
    names = collections.defaultdict(list)
    for top in ("suites", "gpu_probe"):
        for path in (REPO / top).rglob("*.py"):
            names[path.name].append(path.relative_to(REPO).as_posix())
    shared = {n: p for n, p in names.items() if len(p) > 1 and n not in SHARED_NAMES}
    assert not shared, shared
    studies = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "suites").rglob("*study*"))
    assert studies == ["suites/study"], studies


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


def test_capacitys_pure_modules_import_nothing_but_capacity_validity_and_errors():
    """docs/development.md calls these pure: no configs read, no fleet, no store, statistics from gpu_probe.stats
    (cce1a94 claimed it of the whole package)."""
    pure = [f"suites.capacity.{m}" for m in ("curve", "solver", "density", "provision", "noise", "result", "budget")]
    allowed = ("suites.capacity.", "suites.validity", "suites.errors", "gpu_probe.stats")
    reach = {m: [t for t, _, _ in GRAPH[m] if t.startswith(PROJECT) and not t.startswith(allowed)] for m in pure}
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


def own_tests(path: Path) -> list[Path]:
    rel = path.relative_to(REPO)
    return [t for t in (REPO / "tests" / "unit" / rel.parent / f"test_{rel.stem}.py",
                        REPO / "tests" / "e2e" / f"test_{rel.stem}.py") if t.is_file()]


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
