"""The one estimate formatter and table writer (reports/tables.py): every format writes the same
cells, each its own way; seed-group cells carry the between-seed s.e. and the legend that says so."""
from __future__ import annotations

import csv
import io
import math

import pytest

from vpo_harness.harness.core.metrics import Estimate
from vpo_harness.reports.tables import Cell, SEED_LEGEND, format_estimate, format_number, write_table

ONE = Estimate(0.5124, 0.0101, 10)
SEEDED = Estimate(0.5124, 0.0101, 10, 0.0042, 3)
UNDEFINED = Estimate(float("nan"), float("nan"), 0)


def test_format_estimate_every_format() -> None:
    assert format_estimate(ONE) == "0.512±0.010"
    assert format_estimate(SEEDED) == "0.512±0.010 s±0.004"
    assert format_estimate(SEEDED, fmt="markdown") == "0.512 ± 0.010 s± 0.004"
    assert format_estimate(ONE, fmt="html") == "0.512<span class='se'>±0.010</span>"
    assert format_estimate({"mean": -0.03, "stderr": 0.01, "n": 4}, sign=True, nd=2) == "-0.03±0.01"
    assert format_estimate(UNDEFINED) == "-" and format_estimate(None) == "-"
    assert format_estimate({"mean": None, "stderr": None, "n": 3}) == "-"  # a NaN written as null
    assert format_number(-0.00004) == "0.000" and format_number(-0.00004, sign=True) == "+0.000"
    assert format_number(float("nan")) == "-"
    with pytest.raises(ValueError, match="estimate format"):
        format_estimate(ONE, fmt="rtf")


def test_text_table_aligns_and_adds_the_seed_legend() -> None:
    text = write_table(["run", "best@1"], [["a", ONE], ["longer-name", SEEDED]], align="ll")
    lines = text.splitlines()
    assert lines[0].index("best@1") == lines[1].index("0.512") == lines[2].index("0.512") == len("longer-name") + 2
    assert lines[-1] == SEED_LEGEND
    assert SEED_LEGEND not in write_table(["run", "best@1"], [["a", ONE]])


def test_markdown_and_latex_bold_escape_and_notes() -> None:
    rows = [["best_1|x", Cell(SEEDED, bold=True), Cell(ONE, sign=True, note=" [+0.1, +0.2]")],
            ["pass@1", Cell(UNDEFINED, bold=True), "-"]]
    md = write_table(["metric", "a", "diff"], rows, "markdown", notes=["note line"]).splitlines()
    assert md[0] == "| metric | a | diff |" and md[1] == "|:---|---:|---:|"
    assert md[2] == "| best_1\\|x | **0.512 ± 0.010 s± 0.004** | +0.512 ± 0.010 [+0.1, +0.2] |"
    assert md[3] == "| pass@1 | - | - |"  # no bold dash, no note after an undefined value
    assert md[-2:] == ["note line", SEED_LEGEND]
    tex = write_table(["metric", "a", "diff"], rows, "latex", notes=["50% of it"]).splitlines()
    assert tex[0] == "% 50% of it" and tex[2] == r"\begin{tabular}{lrr}" and tex[-1] == r"\end{tabular}"
    assert tex[6] == (r"best\_1|x & \textbf{0.512 $\pm$ 0.010 s $\pm$ 0.004} & +0.512 $\pm$ 0.010 [+0.1, +0.2] \\")


def test_csv_gives_estimates_numeric_columns() -> None:
    text = write_table(["run", "best@1", "k"], [["a", ONE, 3], ["b", SEEDED, None], ["c", "-", 2.5]], "csv")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["run", "best@1", "best@1_se", "best@1_seed_se", "k"]
    assert rows[1] == ["a", "0.5124", "0.0101", "", "3"] and rows[2] == ["b", "0.5124", "0.0101", "0.0042", ""]
    assert rows[3] == ["c", "-", "", "", "2.5"]
    plain = write_table(["x", "y"], [[1, float("nan")]], "csv")
    assert plain == "x,y\n1,\n" and not math.isnan(1)


def test_bad_tables_are_refused() -> None:
    with pytest.raises(ValueError, match="row 0 has 1 cells for 2 columns"):
        write_table(["a", "b"], [["x"]])
    with pytest.raises(ValueError, match="table format 'tsv'"):
        write_table(["a"], [["x"]], "tsv")
