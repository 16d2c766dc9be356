"""bench/evolve_prefix.py: the evolve arms' locality table is written by the project's table writer
(Markdown, fractions to 3 decimals, "-" where one is undefined, counts as counts)."""
from __future__ import annotations

from bench.evolve_prefix import stats_table


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_stats_table_rows_and_undefined_fractions():
    stats = {"evolve-vpo": {"child_parent": 0.12345, "child_other": 0.5, "children": 7, "prefix_calls": 4,
                            "first_answer_parsed": 1},
             "evolve-grpo": {"child_parent": None, "child_other": None, "children": 0, "prefix_calls": 0,
                             "first_answer_parsed": None}}
    lines = stats_table(stats).splitlines()
    assert _cells(lines[0]) == ["evolve arm", "child−parent distance", "child−other distance", "children",
                                "prefix calls", "first answer parsed"]
    assert set(lines[1]) <= set("|:-")  # the Markdown rule under the header
    assert _cells(lines[2]) == ["evolve-vpo", "0.123", "0.500", "7", "4", "1.000"]
    assert _cells(lines[3]) == ["evolve-grpo", "-", "-", "0", "0", "-"]
    assert len(lines) == 4
