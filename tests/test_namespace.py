"""The installed package lives under one import namespace, vpo_harness.<folder>.

Research repositories often hold their own ``benchmarks/``, ``training/``, ``search/`` or ``reports/``
package; a script run from such a repository puts that folder first on sys.path. These tests run a
fresh interpreter (the installed package, no conftest) from a folder like that and check that the
harness imports its own modules, and that the bare top-level names are not ours to import.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_a_users_own_folders_do_not_shadow_the_harness(tmp_path: Path) -> None:
    for name in FOLDERS:
        pkg = tmp_path / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(f"raise ImportError('the user\\'s own {name}/ was imported')\n")
    (tmp_path / "script.py").write_text(SCRIPT.format(folders=set(FOLDERS)))
    res = _run(["script.py"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "bare: []" in res.stdout, res.stdout
    assert "task: vpo_harness.benchmarks.maze" in res.stdout


def test_bare_top_level_names_are_not_installed(tmp_path: Path) -> None:
    for name in FOLDERS:
        res = _run(["-c", f"import {name}"], tmp_path)
        assert res.returncode != 0 and "ModuleNotFoundError" in res.stderr, (name, res.stdout, res.stderr[-500:])
    res = _run(["-c", "import vpo_harness.search.metrics as m; print(m.__name__)"], tmp_path)
    assert res.returncode == 0 and res.stdout.strip() == "vpo_harness.search.metrics", res.stderr[-2000:]
