"""The import graph has no arrow from a lower layer to a higher one.

Layers, bottom to top (a module may import its own layer and the ones below it):

    0 infrastructure   harness.{paths, seeding, store, rows, config, metrics, results},
                       harness.models.*, harness.sandbox.*, harness.executors.*
    1 tasks            benchmarks.*                      (problems, prompts, parsers, rewards, scoring)
    2 consumers        training.*, search.*, reports.*,  (built on infrastructure + tasks)
                       harness.selection (its answer normalisers are the tasks')
    3 orchestration    every other harness module: runner, cli, commands.*, demo, serve;
                       training.val_eval (a driver of the runner)
    4 tools            bench.*                           (anything but tests)

Every import counts, including the lazy ones inside functions: a lazy import is still an arrow, it
only moves the cost. ``tests`` may import anything; nothing outside tests may import ``tests``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("harness", "benchmarks", "training", "search", "reports", "bench")

#: module prefix -> layer; the longest matching prefix wins
LAYERS: dict[str, int] = {
    "harness.paths": 0, "harness.seeding": 0, "harness.store": 0, "harness.rows": 0, "harness.config": 0,
    "harness.metrics": 0, "harness.results": 0, "harness.selection": 2, "harness.models": 0,
    "harness.sandbox": 0, "harness.executors": 0, "harness.progress": 0,
    "benchmarks": 1,
    "training": 2, "search": 2, "reports": 2,
    "harness": 3, "training.val_eval": 3,
    "bench": 4,
}
NAMES = {0: "infrastructure", 1: "tasks", 2: "consumers", 3: "orchestration", 4: "tools"}


def layer_of(module: str) -> int | None:
    best = None
    for prefix in LAYERS:
        if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > len(best)):
            best = prefix
    return None if best is None else LAYERS[best]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import in the file, relative ones resolved."""
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for a in node.names:  # `from harness import metrics` imports the module harness.metrics
                sub = f"{base}.{a.name}"
                out.append((node.lineno, sub if is_module(sub) else base))
    return out


def project_files() -> list[Path]:
    return sorted(f for pkg in PACKAGES if (ROOT / pkg).is_dir() for f in (ROOT / pkg).rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    missing = [module_name(f) for f in project_files() if layer_of(module_name(f)) is None]
    assert not missing, f"classify these modules in tests/test_layers.py LAYERS: {missing}"


def test_no_arrow_points_up() -> None:
    bad = []
    for f in project_files():
        src = module_name(f)
        own = layer_of(src)
        for line, target in sorted(set(imports_of(f))):
            top = target.split(".")[0]
            if top == "tests":
                bad.append(f"{f.relative_to(ROOT)}:{line}: {src} imports {target} (only tests may import tests)")
                continue
            if top not in PACKAGES:
                continue
            dst = layer_of(target)
            if dst is not None and own is not None and dst > own:
                bad.append(f"{f.relative_to(ROOT)}:{line}: {src} ({NAMES[own]}) imports {target} ({NAMES[dst]})")
    assert not bad, "imports against the layering:\n" + "\n".join(bad)


@pytest.mark.parametrize("src,target,ok", [
    ("harness.store", "harness.runner", False), ("benchmarks.maze", "harness.sandbox", True),
    ("training.rl", "harness.cli", False), ("training.rl", "benchmarks.scoring", True),
    ("harness.runner", "training.advantages", True), ("benchmarks.livecodebench", "training.rl", False),
])
def test_layer_order(src: str, target: str, ok: bool) -> None:
    """The checker itself: known arrows are judged as the docstring says."""
    assert (layer_of(target) <= layer_of(src)) is ok


def test_relative_imports_resolve(tmp_path: Path) -> None:
    f = ROOT / "harness" / "models" / "hf.py"
    assert all(t.split(".")[0] not in ("", ".") for _, t in imports_of(f))
