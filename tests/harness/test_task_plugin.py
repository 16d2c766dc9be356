"""A task of one's own (benchmarks/plugins.py): the walk-through of docs/usage.md "Your own task",
run line by line in a folder outside the checkout, and a class that breaks the protocol refused in
one line."""
from __future__ import annotations

import json
import random
import re
import shlex
import textwrap
from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main
from tests.fakes.scripted_openai import ScriptedOpenAIServer

REPO = Path(__file__).resolve().parents[2]


def _walkthrough() -> tuple[str, list[str]]:
    """(the task file, the commands) of the usage section, as a reader copies them."""
    text = (REPO / "docs" / "usage.md").read_text(encoding="utf-8")
    section = text.split("## Your own task", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    bash = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return code, [ln for ln in bash.splitlines() if ln.strip()]


def _coins_responder(body: dict, idx: int) -> str:
    """m answers of random coins in the tags the prompt names (a pure function of the seed)."""
    m = max([int(i) for i in re.findall(r"<response_(\d+)>", body["messages"][-1]["content"])] or [1])
    rng = random.Random(body.get("seed"))
    answers = [" ".join(rng.choice(("1", "2", "5", "10")) for _ in range(rng.randint(1, 6))) for _ in range(m)]
    return "".join(f"<response_{i}>{a}</response_{i}>" for i, a in enumerate(answers, 1))


def test_the_usage_walkthrough_runs_outside_the_checkout(tmp_path: Path, monkeypatch, capsys) -> None:
    assert not tmp_path.resolve().is_relative_to(REPO)
    code, commands = _walkthrough()
    (tmp_path / "coins.py").write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    outputs = []
    with ScriptedOpenAIServer(_coins_responder) as srv:
        for line in commands:
            argv = shlex.split(line.replace("http://localhost:8000/v1", srv.base_url))
            assert argv[0] == "vpo"
            assert main(argv[1:]) == 0, line
            outputs.append(capsys.readouterr().out)
    ls, show = outputs[0], outputs[3]
    assert re.search(r"coins\.py:Coins\s+3\s+valid, close, few_coins\s+test \(20\)", ls)
    # the runs record the file by its absolute path, and every reader loads the task from it
    cfg = json.loads((tmp_path / "runs" / "coins" / "config.json").read_text())
    assert cfg["identity"]["task"]["name"] == f"{tmp_path / 'coins.py'}:Coins"
    assert cfg["identity"]["components"] == ["valid", "close", "few_coins"]
    assert "union_coverage" in show and show.count("coins.py:Coins") >= 4
    assert "best@8" in outputs[4] and "witness_fraction" in outputs[4]  # compare
    rows = [json.loads(x) for x in (tmp_path / "runs" / "coins-evolve" / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 4 * 2 and all(len(r["rewards"][0]) == 3 for r in rows)  # 2 problems, iterations 0..3
    assert "candidates" in outputs[6]  # the evolve run's budget table
    assert (tmp_path / "site" / "index.html").is_file()


BROKEN = '''
import numpy as np
from vpo_harness.benchmarks.base import Benchmark, Problem, user

class NoReward(Benchmark):
    name = "noreward"
    component_names = ("a",)
    def load(self, split, *, path=None, limit=None):
        return [Problem("p0", {})]
    def prompt(self, problem, *, style="full"):
        return user("hi")
    def multi_prompt(self, problem, m, *, style="full"):
        return user("hi")

class NotATask:
    pass
'''


@pytest.mark.parametrize("ref, message", [
    ("broken.py:NoReward", "NoReward lacks the method reward of the task protocol"),
    ("broken.py:NotATask", "NotATask is not a subclass of vpo_harness.benchmarks.base.Benchmark"),
    ("broken.py:Missing", "has no attribute 'Missing'"),
    ("nowhere.py", "no such file"),
    ("no_such_pkg_xyz.tasks:T", "no module 'no_such_pkg_xyz'"),
])
def test_a_broken_task_is_one_line(tmp_path: Path, monkeypatch, capsys, ref: str, message: str) -> None:
    (tmp_path / "broken.py").write_text(textwrap.dedent(BROKEN), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--task", ref, "--model", "mock:words", "--limit", "1", "-n", "1", "--out", "r"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("vpo run: error: task ") and message in err and "\n" not in err, err
    assert not (tmp_path / "r").exists()  # nothing half-written


def test_an_installed_packages_entry_point_is_a_task_by_name(tmp_path: Path, monkeypatch, capsys) -> None:
    """A package's ``vpo_harness.tasks`` entry point (a dist-info on sys.path, as pip installs it)."""
    code, _ = _walkthrough()
    pkg = tmp_path / "coinpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks.py").write_text(code, encoding="utf-8")
    dist = tmp_path / "coinpkg-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: coinpkg\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[vpo_harness.tasks]\ncoins = coinpkg.tasks:Coins\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["ls"]) == 0
    assert re.search(r"^coins\s+3\s+valid", capsys.readouterr().out, re.M)
    assert main(["run", "--task", "coins", "--model", "mock:words", "--limit", "2", "-n", "2", "--out", "r"]) == 0
    assert json.loads((tmp_path / "r" / "config.json").read_text())["identity"]["task"]["name"] == "coins"
    assert main(["show", "r", "--select", ""]) == 0
    assert re.search(r"^r\s+coins\s+2x1", capsys.readouterr().out, re.M)


def test_a_reference_names_default_folders_by_its_class_or_file() -> None:
    from vpo_harness.harness.core.config import RunConfig

    for ref, stem in (("/x/y/coins.py:Coins", "Coins"), ("/x/y/coins.py", "coins"), ("pkg.tasks:Coins", "Coins"),
                      ("maze", "maze")):
        out = RunConfig.of(task=ref, model="mock:words", n=1).default_out()
        assert out.parent.name == "runs" and out.name.startswith(f"{stem}-words-m1-n1-"), (ref, out)


def test_a_bare_file_must_define_one_task_class(tmp_path: Path, capsys) -> None:
    code, _ = _walkthrough()
    (tmp_path / "two.py").write_text(code + "\n\nclass MoreCoins(Coins):\n    name = 'more'\n", encoding="utf-8")
    (tmp_path / "one.py").write_text(code, encoding="utf-8")
    assert main(["ls", "--task", str(tmp_path / "one.py")]) == 0
    assert main(["ls", "--task", str(tmp_path / "two.py")]) == 2
    err = capsys.readouterr().err
    assert "the file defines 2 task classes (Coins, MoreCoins); name one as" in err
