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


#: the y-range of a panel whose values are all 0: the 0..1 axis of a score or rate, with a margin
#: (autoscaling draws -0.04..0.04 around nothing, where rounding noise would look like a signal)
ZERO_YLIM = (-0.03, 1.03)
#: the note such a panel carries
ZERO_NOTE = "0 for every run"


def all_zero(ax: Any) -> bool | None:
    """True when every line and bar of ``ax`` sits at 0, None when it draws neither (a scatter)."""
    import numpy as np
    from matplotlib.patches import Rectangle

    vals: list[float] = []
    for ln in ax.get_lines():
        vals += [float(v) for v in np.asarray(ln.get_ydata(), dtype=float).ravel()]
    vals += [float(r.get_height()) for r in ax.patches if isinstance(r, Rectangle)]
    vals = [v for v in vals if v == v]
    if not vals:
        return None
    return max(abs(v) for v in vals) < 1e-12


def mark_all_zero(ax: Any, fontsize: float | None = None) -> bool:
    """Put an all-zero panel on :data:`ZERO_YLIM` with :data:`ZERO_NOTE` (once); True when it was one."""
    if not all_zero(ax):
        return False
    ax.set_ylim(*ZERO_YLIM)
    if not any(ZERO_NOTE in t.get_text() for t in ax.texts):
        ax.text(0.5, 0.5, ZERO_NOTE, transform=ax.transAxes, ha="center", color="0.35", fontsize=fontsize)
    return True
