"""The package lives under one import namespace, vpo_harness.<folder>, a real folder of links.

Research repositories often hold their own ``benchmarks/``, ``training/``, ``search/`` or ``reports/``
package; a script run from such a repository puts that folder first on sys.path. These tests run a
fresh interpreter (no conftest) that sees only what an install exposes, the ``vpo_harness`` folder,
from a folder like that and check that the harness imports its own modules, and that the bare
top-level names are not ours to import.

The checkout one stands in is the one that runs: with a second checkout installed beside it (first on
PYTHONPATH, ahead of any site-packages install), ``python -m vpo_harness...`` from the root, a bench
script, and a child given :func:`child_pythonpath` all import this checkout.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from vpo_harness.harness.core.paths import child_pythonpath, import_root

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("harness", "benchmarks", "training", "search", "reports")

SCRIPT = """
import sys
from vpo_harness.benchmarks import get_task
from vpo_harness.training import advantages
from vpo_harness.search import metrics
from vpo_harness.reports import tables
from vpo_harness.harness.core import paths
task = get_task("maze")
assert type(task).__module__ == "vpo_harness.benchmarks.maze", type(task).__module__
mine = sorted(m for m in sys.modules if m.split(".")[0] in {folders!r})
print("bare:", mine)
print("task:", type(task).__module__)
"""


def _run(args: list[str], cwd: Path, pythonpath: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def _installed(tmp_path: Path) -> str:
    """A site folder holding what an install puts on the path: the ``vpo_harness`` folder alone."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "vpo_harness").symlink_to(ROOT / "vpo_harness", target_is_directory=True)
    return str(site)


def _other_checkout(tmp_path: Path) -> str:
    """A second checkout, installed: its vpo_harness refuses to be imported, naming itself."""
    other = tmp_path / "other-checkout"
    (other / "vpo_harness" / "harness").mkdir(parents=True)
    (other / "vpo_harness" / "__init__.py").write_text("raise ImportError('the OTHER checkout was imported')\n")
    return str(other)


def test_the_namespace_folder_links_every_layer_folder() -> None:
    """vpo_harness/ holds one relative link per top-level package (so a clone anywhere, or a copy of
    the tree, still links to itself), and nothing that is not at the root."""
    ns = ROOT / "vpo_harness"
    links = {p.name: os.readlink(p) for p in ns.iterdir() if p.is_symlink()}
    assert {n for n in links if (ns / n / "__init__.py").is_file()} == set(FOLDERS)
    assert all(target == f"../{name}" for name, target in links.items()), links
    assert (ns / "__init__.py").is_file() and not (ns / "__init__.py").is_symlink()


def test_a_users_own_folders_do_not_shadow_the_harness(tmp_path: Path) -> None:
    for name in FOLDERS:
        pkg = tmp_path / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(f"raise ImportError('the user\\'s own {name}/ was imported')\n")
    (tmp_path / "script.py").write_text(SCRIPT.format(folders=set(FOLDERS)))
    res = _run(["script.py"], tmp_path, _installed(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "bare: []" in res.stdout, res.stdout
    assert "task: vpo_harness.benchmarks.maze" in res.stdout


def test_bare_top_level_names_are_not_installed(tmp_path: Path) -> None:
    site = _installed(tmp_path)
    for name in FOLDERS:
        res = _run(["-c", f"import {name}"], tmp_path, site)
        assert res.returncode != 0 and "ModuleNotFoundError" in res.stderr, (name, res.stdout, res.stderr[-500:])
    res = _run(["-c", "import vpo_harness.search.metrics as m; print(m.__name__)"], tmp_path, site)
    assert res.returncode == 0 and res.stdout.strip() == "vpo_harness.search.metrics", res.stderr[-2000:]


WHERE = "import vpo_harness.harness.core.paths as p, vpo_harness as v; print(v.__file__); print(p.REPO_ROOT)"


def test_python_m_from_the_root_runs_this_checkout(tmp_path: Path) -> None:
    """From the checkout's root, ``python -m vpo_harness...`` is this checkout, not the installed one."""
    other = _other_checkout(tmp_path)
    res = _run(["-c", WHERE], ROOT, other)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == [str(ROOT / "vpo_harness" / "__init__.py"), str(ROOT)]
    res = _run(["-m", "vpo_harness.harness.app.cli", "--help"], ROOT, other)
    assert res.returncode == 0 and "usage:" in res.stdout, res.stderr[-2000:]


def test_a_child_given_child_pythonpath_runs_this_checkout(tmp_path: Path) -> None:
    """The one helper for children: this checkout's root first, the caller's PYTHONPATH after it, and
    nothing written anywhere (a read-only cache root must not stop a served model from starting)."""
    other = _other_checkout(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o500)
    path = child_pythonpath({"PYTHONPATH": other})
    assert path.split(os.pathsep) == [str(ROOT), other] and import_root() == ROOT
    res = subprocess.run([sys.executable, "-c", WHERE], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": path, "VPO_CACHE": str(cache)})
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split()[1] == str(ROOT)
    assert list(cache.iterdir()) == []


def _header_line(tree: ast.Module) -> int | None:
    """The line of a module-level ``sys.path.insert(0, <the checkout's root>)``, if any."""
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            text = ast.unparse(node.value)
            if text.startswith("sys.path.insert(0, ") and ("parents[1]" in text or "parent.parent" in text
                                                            or "REPO" in text or "ROOT" in text):
                return node.lineno
        if isinstance(node, ast.If) and any(_header_line(ast.Module(body=[b], type_ignores=[])) for b in node.body):
            return node.lineno
    return None


def _first_project_import(tree: ast.Module) -> int | None:
    lines = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0]
             in ("vpo_harness", "bench")]
    lines += [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Import)
              and any(a.name.split(".")[0] in ("vpo_harness", "bench") for a in n.names)]
    return min(lines) if lines else None


def test_every_bench_and_script_file_puts_its_checkout_first() -> None:
    """``python bench/x.py`` puts bench/ on sys.path, not the checkout: each runnable file under bench/
    and scripts/ that imports the project inserts its checkout's root at the front first (ahead of
    PYTHONPATH and site-packages), so the checkout it sits in is the one it runs."""
    missing = []
    for f in sorted([*ROOT.glob("bench/*.py"), *ROOT.glob("scripts/*.py")]):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        first = _first_project_import(tree)
        if first is None or f.name == "__init__.py":
            continue
        header = _header_line(tree)
        if header is None or header > first:
            missing.append(f"{f.relative_to(ROOT)}:{first}: imports the project before putting its checkout first")
    assert not missing, "\n".join(missing)


def test_a_bench_script_runs_this_checkout(tmp_path: Path) -> None:
    """The header at work: a bench file run by path, with the other checkout installed, from elsewhere."""
    res = _run([str(ROOT / "bench" / "runner_overhead.py"), "--help"], tmp_path, _other_checkout(tmp_path))
    assert res.returncode == 0 and "usage:" in res.stdout, res.stderr[-2000:]
