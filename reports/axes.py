"""Axes shared by the figures of several readers (plots, selected, report); matplotlib is
imported by the caller, so importing this is free."""
from __future__ import annotations

from typing import Any, Sequence


def k_axis(ax: Any, ks: Sequence[int]) -> None:
    """log2 k axis labelled with the ks themselves (1, 2, 4, ..., 30), not powers of two."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log", base=2)
    ax.set_xticks(list(ks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.minorticks_off()
    ax.set_xlabel("k (candidates per problem)")
