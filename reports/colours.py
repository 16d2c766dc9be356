"""One style (colour, then line style) per run, the same in every figure and page that shows it.

Why a helper of its own: a run's colour used to be whatever matplotlib's colour cycle gave the n-th
line of one figure, and later its position in a list, so a run changed colour as folders were added
and two runs shared one past ten. Now a run's key (its folder path) picks a preferred colour
(a hash, the same on every machine and in every document); the runs of one document, taken in the
order they are first seen, take the first free colour from their preferred one on. So up to
:data:`PALETTE` runs get distinct colours, then the colours repeat with the next line style of
:data:`DASHES`, and a run seen earlier keeps its style whatever is added after it
(:class:`StyleBook`; the viewer keeps one for its whole session).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Iterable

#: Tableau 10 (matplotlib's ``C0``..``C9``) and six more picked to differ from all of them in hue or
#: lightness (black, gold, navy, salmon, tan, deep plum), as hex so SVG and matplotlib read them alike
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
           "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
           "#000000", "#f3c300", "#00429d", "#f99379", "#c2b280", "#5d0f6e")
#: line styles once every colour is taken: matplotlib names, with the SVG ``stroke-dasharray`` of each
DASHES = ("solid", "dashed", "dotted", "dashdot")
SVG_DASH = {"solid": None, "dashed": "7 4", "dotted": "2 3", "dashdot": "7 3 2 3"}


@dataclass(frozen=True)
class RunStyle:
    colour: str
    dash: str = "solid"

    @property
    def svg_dash(self) -> str | None:
        return SVG_DASH[self.dash]


def _preferred(key: str) -> int:
    return zlib.crc32(str(key).encode("utf-8")) % len(PALETTE)


class StyleBook:
    """Styles handed out in order of first sight: a key keeps the style it got for the book's life."""

    def __init__(self) -> None:
        self._by_key: dict[str, tuple[int, int]] = {}
        self._taken: set[tuple[int, int]] = set()

    def style(self, key: str) -> RunStyle:
        slot = self._by_key.get(key)
        if slot is None:
            slot = self._free(_preferred(key))
            self._by_key[key] = slot
            self._taken.add(slot)
        return RunStyle(PALETTE[slot[0]], DASHES[slot[1] % len(DASHES)])

    def _free(self, pref: int) -> tuple[int, int]:
        for dash in range(len(DASHES)):
            for i in range(len(PALETTE)):
                slot = ((pref + i) % len(PALETTE), dash)
                if slot not in self._taken:
                    return slot
        return (pref, len(self._taken) // len(PALETTE))  # every style taken: repeat, by count


def run_styles(keys: Iterable[str]) -> list[RunStyle]:
    """The styles of one document's runs, in the order given (repeated keys share a style)."""
    book = StyleBook()
    return [book.style(str(k)) for k in keys]


#: Okabe and Ito's eight colours, distinguishable under the common colour-vision deficiencies (and in
#: greyscale by lightness for the first few): the palette of ``vpo plot --style paper``
COLOUR_BLIND_SAFE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#000000", "#F0E442")


def paper_styles(n: int) -> list[RunStyle]:
    """The styles of a paper figure's ``n`` runs, in order: :data:`COLOUR_BLIND_SAFE`, then the same
    colours again with the next line style of :data:`DASHES`."""
    k = len(COLOUR_BLIND_SAFE)
    return [RunStyle(COLOUR_BLIND_SAFE[i % k], DASHES[(i // k) % len(DASHES)]) for i in range(n)]


def run_colour(key: str) -> str:
    """The colour of a run shown alone (its preferred colour: what it gets when first in a document)."""
    return PALETTE[_preferred(key)]
