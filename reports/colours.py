"""One colour per run, the same in every figure and page that shows it.

Why a helper of its own: a run's colour used to be whatever matplotlib's colour cycle gave the n-th
line of one figure, so the same run changed colour from one figure to the next, and the viewer had
no colours at all. Every reader that draws runs asks here instead: ``index`` is the run's position
in a list every figure of a document shares (the runs of a report, the run folders the viewer
found), which keeps up to ten runs distinct; without one, the colour follows from the run's label
alone (stable across documents, but two runs may then share a colour).
"""
from __future__ import annotations

import zlib

#: Tableau 10 (matplotlib's default cycle ``C0``..``C9``), as hex so SVG and matplotlib read it alike
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def run_colour(label_or_id: str, index: int | None = None) -> str:
    """The colour of a run: by its ``index`` in the shared list when given, else by its label."""
    if index is None:
        index = zlib.crc32(str(label_or_id).encode("utf-8"))
    return PALETTE[index % len(PALETTE)]
