"""What a search reads about a run, kept between searches: every candidate's numbers as arrays, and
where each row's searchable fields lie in its line.

A search used to walk 100k candidates in Python for ``score>0.5`` and parse every row for a common
word. Here the numbers are numpy arrays (a range or a flag is one vectorised comparison) and each
row's field spans (:func:`vpo_harness.reports.view.search_fields.locate`) are found the first time a text term
reaches the row and then reused. Both follow the byte-offset index: a row that is new or replaced
(a retried chain) since the last search is added, the rest is kept, and a file that was replaced
(a new ``rows`` list in the index) starts the arrays again. Memory is a few numbers per candidate
and eight per row (two more per answer once an ``answer:`` term reached the row), never the texts.
"""
from __future__ import annotations

import threading
import weakref
from itertools import chain
from operator import attrgetter
from typing import Any, Callable, Iterable

import numpy as np

from vpo_harness.reports.view.samples import RowMeta, SampleIndex

_SCALARS = attrgetter("scalars")
_ROW = attrgetter("error", "problem_id", "offset", "length")
_NUMBERS = attrgetter("scalars", "passed", "rewards")
#: what is known of a row's line besides its located spans: plain, spans not looked for yet;
#: plain, spans not proven (parse it when it holds a term); None: not plain (always parse it)
PLAIN = "plain"
STRUCT = "struct"


def _float(x: Any) -> float:
    """``float(x)``, NaN where it has none: a NaN compares false, as an unreadable score did."""
    try:
        return float(x)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _floats(values: Callable[[], Iterable[Any]], n: int) -> np.ndarray:
    """``n`` numbers from ``values()`` as floats: numpy converts them as ``float()`` does; where one
    cannot be (a hand-edited row), :func:`_float` one by one from a second ``values()``."""
    try:
        return np.fromiter(values(), float, n)
    except (TypeError, ValueError, OverflowError):
        return np.fromiter(map(_float, values()), float, n)


class SearchIndex:
    """The arrays of one :class:`SampleIndex`. Callers hold :attr:`lock` around :meth:`sync` and
    their use of the arrays (searches of one run take turns)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._clear(None)

    def _clear(self, rows_ref: list[RowMeta] | None) -> None:
        self._rows_ref = rows_ref
        self.metas: list[RowMeta] = []  # per slot: the row its numbers were built from
        self.problems: list[str] = []
        self._pidx: dict[str, int] = {}
        # per slot
        self.first = np.zeros(0, np.int64)  # its first candidate in the candidate arrays
        self.count = np.zeros(0, np.int64)  # its candidates (0: a chain without any, e.g. a failed generation)
        self.error = np.zeros(0, bool)
        self.problem = np.zeros(0, np.int64)  # index into self.problems
        self.offset = np.zeros(0, np.int64)
        self.length = np.zeros(0, np.int64)
        self.spans: list[Any] = []  # locate()'s array, PLAIN, STRUCT or None, for the row in span_meta
        self.span_meta: list[RowMeta | None] = []
        # per candidate (a replaced row's old candidates stay, marked not live)
        self.live = np.zeros(0, bool)
        self.slot = np.zeros(0, np.int64)
        self.blocks: list[RowMeta] = []  # the row of each block of candidates, in their order
        self._numbered = 0  # blocks whose numbers are read
        self.score = np.zeros(0)
        self.passed = np.zeros(0, np.int8)  # 1, 0, or -1 where the row has no pass for this answer
        self.rewards: list[np.ndarray] = []  # one column per reward component, NaN where missing

    def sync(self, ix: SampleIndex) -> list[RowMeta]:
        """Bring the arrays up to ``ix``'s rows; returns the rows they now describe (a snapshot)."""
        if ix.rows is not self._rows_ref:
            self._clear(ix.rows)
        rows = ix.rows[:]  # one atomic copy: a refresh in another thread may append meanwhile
        changed = [s for s, (a, b) in enumerate(zip(rows, self.metas)) if a is not b]
        new = list(range(len(self.metas), len(rows)))
        if not changed and not new:
            return rows
        dead = int(self.live.size - self.live.sum()) + int(self.count[changed].sum()) if changed else 0
        if dead > max(1024, self.live.size // 2):  # many retried rows: start the arrays again
            self._clear(ix.rows)
            changed, new = [], list(range(len(rows)))
        self._add([rows[s] for s in changed + new], changed, len(new))
        for s in changed:  # their spans are found again: span_meta no longer is their row
            self.metas[s] = rows[s]
        self.metas += rows[len(self.metas):]
        return rows

    def _add(self, metas: list[RowMeta], changed: list[int], n_new: int) -> None:
        """Append the candidates of ``metas`` (rows ``changed``, then ``n_new`` new ones); their
        numbers are read when a query first needs them (:meth:`numbers`)."""
        n = len(metas)
        counts = np.fromiter(map(len, map(_SCALARS, metas)), np.int64, n)
        total = int(counts.sum())
        base = self.live.size
        first = base + np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64) if n else np.zeros(0, np.int64)
        slots = np.asarray(changed + list(range(len(self.metas), len(self.metas) + n_new)), np.int64)
        if changed:
            old = np.concatenate([np.arange(f, f + c) for f, c in zip(self.first[changed], self.count[changed])] or [[]])
            self.live[old.astype(np.int64)] = False
        self.live = np.concatenate((self.live, np.ones(total, bool)))
        self.slot = np.concatenate((self.slot, np.repeat(slots, counts)))
        self.blocks += metas
        err, pids, off, ln = (list(c) for c in zip(*map(_ROW, metas))) if n else ([],) * 4
        for pid in dict.fromkeys(pids):
            if pid not in self._pidx:
                self._pidx[pid] = len(self.problems)
                self.problems.append(pid)
        k = len(changed)
        for name, vals in (("first", first), ("count", counts), ("error", np.array(err, bool)),
                           ("problem", np.fromiter(map(self._pidx.__getitem__, pids), np.int64, n)),
                           ("offset", np.array(off, np.int64)), ("length", np.array(ln, np.int64))):
            arr = getattr(self, name)
            arr[changed] = vals[:k]
            setattr(self, name, np.concatenate((arr, vals[k:])))
        self.spans += [None] * n_new
        self.span_meta += [None] * n_new

    def numbers(self) -> None:
        """Read the scores, passes and reward vectors of the candidates added since the last call."""
        metas = self.blocks[self._numbered:]
        if not metas:
            return
        self._numbered = len(self.blocks)
        scal, pas, rew = (list(c) for c in zip(*map(_NUMBERS, metas)))
        counts = list(map(len, scal))
        total = sum(counts)
        base = self.score.size
        score = _floats(lambda: chain.from_iterable(scal), total)
        if list(map(len, pas)) == counts:
            flat = list(chain.from_iterable(pas))
            passed = np.array(flat if set(map(type, flat)) <= {bool} else [bool(x) for x in flat], np.int8)
        else:
            passed = np.array([bool(ps[j]) if j < len(ps) else -1 for ps, c in zip(pas, counts) for j in range(c)],
                              np.int8)
        if list(map(len, rew)) == counts:
            vecs = list(chain.from_iterable(rew))
        else:
            vecs = [rs[j] if j < len(rs) else () for rs, c in zip(rew, counts) for j in range(c)]
        widths = set(map(len, vecs))
        width = max(widths, default=0)
        while len(self.rewards) < width:
            self.rewards.append(np.full(base, np.nan))
        if len(widths) == 1:
            mat = _floats(lambda: chain.from_iterable(vecs), total * width).reshape(total, width)
            cols = [mat[:, i] for i in range(width)]
        else:
            cols = [_floats(lambda i=i: (v[i] if i < len(v) else None for v in vecs), total) for i in range(width)]
        cols += [np.full(total, np.nan)] * (len(self.rewards) - width)
        self.rewards = [np.concatenate((old, c)) for old, c in zip(self.rewards, cols)]
        self.score = np.concatenate((self.score, score))
        self.passed = np.concatenate((self.passed, passed))

    def reward(self, i: int) -> np.ndarray:
        """Component ``i`` of every candidate's reward vector (NaN where a vector is shorter)."""
        return self.rewards[i] if i < len(self.rewards) else np.full(self.live.size, np.nan)


_INDEXES: "weakref.WeakKeyDictionary[SampleIndex, SearchIndex]" = weakref.WeakKeyDictionary()
_GUARD = threading.Lock()


def search_index(ix: SampleIndex) -> SearchIndex:
    """The search arrays kept for ``ix`` (made on first use, dropped with it)."""
    with _GUARD:
        si = _INDEXES.get(ix)
        if si is None:
            si = _INDEXES[ix] = SearchIndex()
        return si
