""""Did you mean" for a mistyped name: one helper for models, tasks, splits, metrics and flags.

Why one place: each caller used to spell its own difflib call with its own cutoff and wording, and
most names (tasks, splits, metrics) had none, so ``--task maz`` listed the known tasks but did not
point at the one that was meant.
"""
from __future__ import annotations

import difflib
from typing import Iterable

#: similarity (difflib's ratio) a known name needs to be offered: 0.6 is difflib's own default and
#: catches one or two wrong letters in short names (``maz`` -> ``maze``, ``tset`` -> ``test``)
CUTOFF = 0.6


def close_matches(word: str, choices: Iterable[str], n: int = 3, cutoff: float = CUTOFF) -> list[str]:
    """The known names nearest to ``word``, best first (case-insensitive; at most ``n``)."""
    options = [str(c) for c in choices]
    by_lower: dict[str, str] = {}
    for c in options:
        by_lower.setdefault(c.lower(), c)
    near = difflib.get_close_matches(str(word).lower(), list(by_lower), n=n, cutoff=cutoff)
    return [by_lower[x] for x in near]


def did_you_mean(word: str, choices: Iterable[str], n: int = 3, cutoff: float = CUTOFF) -> str:
    """``"did you mean maze?"`` (``"did you mean a or b?"``), or ``""`` when nothing is close."""
    near = close_matches(word, choices, n=n, cutoff=cutoff)
    return f"did you mean {' or '.join(near)}?" if near else ""


def unknown(kind: str, word: str, choices: Iterable[str]) -> str:
    """One line for an unknown name: ``unknown task 'maz' (did you mean maze?); known: a, b``."""
    options = [str(c) for c in choices]
    hint = did_you_mean(word, options)
    return f"unknown {kind} {word!r}{f' ({hint})' if hint else ''}; known: {', '.join(options)}"
