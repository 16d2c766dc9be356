"""One estimate, one standard error: in `vpo show` of a seed group, selected@k[oracle] (= best@k)
prints the cell best@k prints, because both combine the seeds with ``mean_over_seeds``."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from harness.core.seeds import register_seeds


@pytest.fixture(scope="module")
def group(tmp_path_factory) -> Path:
    from tests.reports.conftest import write_run

    parent = tmp_path_factory.mktemp("group") / "g"
    for s in (0, 1, 2):
        write_run(parent / f"seed-{s}", "hf:x", 4, 1, 6, spread=0.6, seed=10 + s)
    register_seeds(parent, [0, 1, 2], {})
    return parent


def test_oracle_selection_prints_best_at_k_of_a_seed_group(group: Path, capsys: pytest.CaptureFixture) -> None:
    from harness.app.commands import show

    show.run(argparse.Namespace(runs=[str(group)], json=False, ks=None, taus=None, select="random"))
    out = capsys.readouterr().out
    main, sel = out.split("selected@k", 1)
    head = main.splitlines()[0].split()
    row = next(ln for ln in main.splitlines() if ln.startswith("g (3 seeds)"))
    cells = re.findall(r"\d\.\d{3}±\d\.\d{3} s±\d\.\d{3}", row)
    best = dict(zip([h for h in head if h.startswith(("best@", "pass@", "pass^", "cover@", "diversity"))], cells))
    oracle = next(ln for ln in sel.splitlines() if "oracle" in ln)
    got = re.findall(r"\d\.\d{3}±\d\.\d{3} s±\d\.\d{3}", oracle)
    assert got[:3] == [best["best@1"], best["best@2"], best["best@4"]], (got, best)
