"""The folders are the layers, and the import graph has no arrow from a lower layer to a higher one.

The layers, their packages and what each holds are the table of docs/layers.md, the one copy: this
test reads each package's layer from it and checks that the table names every module of a package.
A module may import its own layer package and the packages of lower layers; two packages on one
layer are siblings and import neither each other.

``harness`` itself (harness/__init__.py) is the public face, ``harness.run`` / ``harness.load_run``,
resolved lazily; it sits on the layer of what it hands out. Every import counts, including the lazy
ones inside functions: a lazy import is still an arrow, it only moves the cost. ``tests`` may import
anything; nothing outside tests may import ``tests``.

The folders install under one namespace, ``vpo_harness.<folder>``, and every import names it that way
(checked below); the layers are named here by their folders, so an import's ``vpo_harness.`` is
dropped before it is judged.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the namespace the top-level folders are imported under: vpo_harness/ holds one link per folder
NS = "vpo_harness"
#: the folders that are packages under it, read from its links (the one list)
NAMESPACED = tuple(sorted(p.name for p in (ROOT / NS).iterdir() if p.is_symlink() and (p / "__init__.py").is_file()))
PACKAGES = ("harness", "benchmarks", "training", "search", "reports", "bench")

DOC = ROOT / "docs" / "layers.md"
#: a row of the doc's table: ``| 3 consumers | `training/`, `search/` | what lives there | ... |``
_ROW = re.compile(r"^\| (\d+) (\w+) \| ([^|]+) \| ([^|]+) \|", re.M)


def _table() -> list[tuple[int, str, list[str], str]]:
    """(layer, name, packages, what lives there) per row of docs/layers.md's table."""
    rows = [(int(n), name, [p.strip("/").replace("/", ".") for p in re.findall(r"`([\w/]+/)`", pkgs)], what)
            for n, name, pkgs, what in _ROW.findall(DOC.read_text(encoding="utf-8"))]
    assert rows, f"{DOC}: no layer table found"
    return rows


#: layer package -> layer, read from docs/layers.md. A module's layer is its package's: there are no
#: per-module exceptions.
LAYERS: dict[str, int] = {pkg: n for n, _, pkgs, _ in _table() for pkg in pkgs}
#: modules outside every layer package, with their layer
FACADES: dict[str, int] = {"harness": 2}
NAMES = {n: name for n, name, _, _ in _table()}


def package_of(module: str) -> str | None:
    """The layer package a module belongs to (the longest matching one), or a facade's own name."""
    if module in FACADES:
        return module
    best = None
    for pkg in LAYERS:
        if (module == pkg or module.startswith(pkg + ".")) and (best is None or len(pkg) > len(best)):
            best = pkg
    return best


def layer_of(module: str) -> int | None:
    pkg = package_of(module)
    return None if pkg is None else {**LAYERS, **FACADES}[pkg]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def folder_name(module: str) -> str:
    """``vpo_harness.search.engine`` -> ``search.engine``: the layers are named by their folders."""
    return module[len(NS) + 1:] if module.startswith(NS + ".") else module


def absolute_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module as written) of every absolute import statement in the file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.append((node.lineno, node.module))
    return out


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module by folder name) for every import in the file, relative ones resolved."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, folder_name(a.name)) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = folder_name(node.module or "")
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:  # `from harness.core import metrics` imports the module harness.core.metrics
                sub = f"{base}.{a.name}"
                out.append((node.lineno, sub if is_module(sub) else base))
    return out


def project_files() -> list[Path]:
    return sorted(f for pkg in PACKAGES if (ROOT / pkg).is_dir() for f in (ROOT / pkg).rglob("*.py"))


def arrows() -> list[tuple[Path, int, str, str]]:
    """(file, line, importing module, imported module) for every import of a project module."""
    out = []
    for f in project_files():
        src = module_name(f)
        for line, target in sorted(set(imports_of(f))):
            if target.split(".")[0] in PACKAGES + ("tests",):
                out.append((f, line, src, target))
    return out


def judge(src: str, dst: str) -> str | None:
    """Why the arrow src -> dst is against the layering, or None when it is allowed."""
    if dst.split(".")[0] == "tests":
        return "only tests may import tests"
    a, b = package_of(src), package_of(dst)
    if a is None or b is None or a == b:
        return None
    la, lb = layer_of(src), layer_of(dst)
    if a in FACADES and lb <= la:  # the face hands out what lies on its layer and below
        return None
    if lb > la:
        return f"{NAMES[la]} {a} imports {NAMES[lb]} {b}, a higher layer"
    if lb == la:
        return f"{a} and {b} are siblings on the {NAMES[la]} layer"
    return None


def test_layer_packages_are_folders() -> None:
    """Every layer is a package on disk, none inside another, and `harness/` holds nothing but its
    floors and its face: a reader tells the ground floor from the roof by the path."""
    for pkg in LAYERS:
        assert (ROOT.joinpath(*pkg.split(".")) / "__init__.py").is_file(), f"{pkg}: not a package"
    nested = [(a, b) for a in LAYERS for b in LAYERS if a != b and b.startswith(a + ".")]
    assert not nested, f"layer packages inside layer packages: {nested}"
    # a folder left with nothing but __pycache__ (after a checkout moved its files) is not code
    code = [p for p in (ROOT / "harness").iterdir() if p.name != "__init__.py" and
            (p.suffix == ".py" if p.is_file() else any(p.rglob("*.py")))]
    stray = sorted(str(p.relative_to(ROOT)) for p in code if module_name(p.with_suffix("")) not in LAYERS)
    assert not stray, f"harness/ holds {stray} outside its floors (harness/core, harness/eval, harness/app)"


def test_the_doc_table_is_the_layering() -> None:
    """docs/layers.md holds the layers in order, every top-level package on one, and each row names
    every module and subpackage of its packages (bench/'s are listed in CONTRIBUTING.md and checked
    by tests/bench/test_bench_list.py), so the one list cannot fall behind the tree."""
    rows = _table()
    assert [n for n, *_ in rows] == list(range(len(rows)))
    assert {"harness.core", "benchmarks", "harness.eval", "training", "search", "reports", "harness.app",
            "bench"} == set(LAYERS)
    unnamed = []
    for _, _, pkgs, what in rows:
        named = set(re.findall(r"`(\w+)/?`", what))
        for pkg in pkgs:
            if pkg == "bench":
                continue
            folder = ROOT.joinpath(*pkg.split("."))
            for p in sorted(folder.iterdir()):
                name = p.stem if p.suffix == ".py" else p.name
                is_code = p.suffix == ".py" or (p / "__init__.py").is_file()
                if is_code and name != "__init__" and module_name(folder / name) not in LAYERS and name not in named:
                    unnamed.append(f"{pkg}.{name}")
    assert not unnamed, f"modules not named in their row of docs/layers.md: {unnamed}"


def test_every_module_has_a_layer() -> None:
    missing = [module_name(f) for f in project_files() if package_of(module_name(f)) is None]
    assert not missing, f"these modules are in no layer package of the docs/layers.md table: {missing}"


def test_no_arrow_points_up() -> None:
    """The module-level rule: every import, lazy ones included, goes down a layer or stays home."""
    bad = [f"{f.relative_to(ROOT)}:{line}: {src} imports {dst} ({why})"
           for f, line, src, dst in arrows() if (why := judge(src, dst))]
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


def folder_graph() -> dict[str, set[str]]:
    """Layer package -> the layer packages it imports (its own left out)."""
    graph: dict[str, set[str]] = {pkg: set() for pkg in {**LAYERS, **FACADES}}
    for _, _, src, dst in arrows():
        a, b = package_of(src), package_of(dst)
        if a and b and a != b:
            graph[a].add(b)
    return graph


def test_folders_import_only_downwards() -> None:
    """The folder-level rule: between layer packages, every arrow goes to a strictly lower layer, so
    the folder graph is acyclic and reads as the table in the docstring."""
    bad = [f"{a} ({NAMES[layer_of(a)]}) -> {b} ({NAMES[layer_of(b)]})"
           for a, dsts in sorted(folder_graph().items()) for b in sorted(dsts) if judge(a, b)]
    assert not bad, "folders importing sideways or upwards:\n" + "\n".join(bad)


def test_top_level_folders_follow_the_layers() -> None:
    """Outside harness/ (which holds three floors) a top-level folder is one layer: training, search,
    reports and bench import no folder above them, and benchmarks only the ground floor."""
    graph = folder_graph()
    assert graph["benchmarks"] <= {"harness.core"}
    for pkg in ("training", "search", "reports", "bench"):
        assert all(layer_of(b) < layer_of(pkg) for b in graph[pkg]), (pkg, graph[pkg])
    assert "harness.app" not in set().union(*(v for k, v in graph.items() if k != "bench"))


def file_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {module_name(f): set() for f in project_files()}
    for _, _, src, dst in arrows():
        if dst in graph and dst != src:
            graph[src].add(dst)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (as the list of its nodes, first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        path.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def test_no_import_cycle_between_files() -> None:
    """No two project files import each other, directly or round a longer loop (lazy imports count):
    each file can be read, and moved, after the files it imports."""
    cycle = find_cycle(file_graph())
    assert cycle is None, "import cycle between files: " + " -> ".join(cycle)


def test_find_cycle_finds_cycles() -> None:
    """The cycle finder itself, on graphs with and without a loop."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"b"}}) == ["b", "b"]


@pytest.mark.parametrize("src,dst,ok", [
    ("harness.core.store", "harness.eval.runner", False), ("benchmarks.maze", "harness.core.sandbox", True),
    ("training.rl", "harness.app.cli", False), ("training.rl", "benchmarks.scoring", True),
    ("harness.app.cli", "training.advantages", True), ("benchmarks.livecodebench", "training.rl", False),
    ("search.evolve", "harness.eval.runner", True), ("harness.eval.runner", "search.engine", False),
    ("training.rl", "search.engine", False), ("search.engine", "training.rl", False),
    ("reports.evolve", "search.metrics", True), ("search.engine", "reports.evolve", False),
    ("harness.core.results", "harness.core.store", True), ("bench.scaleout", "harness.app.cli", True),
    ("harness", "harness.eval.runner", True), ("harness.core.models.hf", "tests.fakes", False),
])
def test_judge(src: str, dst: str, ok: bool) -> None:
    """The checker itself: known arrows are judged as the docstring says."""
    assert (judge(src, dst) is None) is ok


def test_every_import_names_the_namespace() -> None:
    """The project's modules are imported as vpo_harness.<folder>.<module> everywhere, tests and
    benches included: a bare ``import search`` would find a user's own ``search/`` folder first (or,
    from the checkout, load a second copy of our module beside the installed one)."""
    files = project_files() + sorted((ROOT / "tests").rglob("*.py"))
    bare = [f"{f.relative_to(ROOT)}:{line}: {name}" for f in files for line, name in absolute_imports(f)
            if name.split(".")[0] in NAMESPACED]
    assert not bare, "imports without the vpo_harness namespace:\n" + "\n".join(bare)


def test_relative_imports_resolve() -> None:
    f = ROOT / "harness" / "core" / "models" / "hf.py"
    assert all(t.split(".")[0] not in ("", ".") for _, t in imports_of(f))
