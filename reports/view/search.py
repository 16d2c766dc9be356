"""Search inside a run's completions: full text and fields, on the server, over the byte-offset index.

The query is words and ``field:value`` terms, all of which must hold for a candidate:

- ``word`` or ``"a phrase"``: anywhere in the chain's raw text, the candidate's parsed answer, the
  generation error or the candidate's task details (verdicts, reasons, error tails);
- ``text:``, ``answer:``, ``error:`` (the generation error or the details' errors and reason),
  ``verdict:`` (one per-test verdict, exactly: ``verdict:TLE``), ``problem:`` (problem id contains);
- ``score>0.5`` and ``<``, ``<=``, ``>=``, ``=`` on the scalar score, or on a reward component by
  name (``gold>=1``);
- ``is:passed``, ``is:failed``, ``is:error`` (the generation failed).

Text matching ignores case. The unit is a candidate (answer ``j`` of a chain); a chain whose
generation failed has no candidate and matches when every term holds for the chain itself.

Why it is fast on a large run, and still exact (every result equals parsing every row, tested on
rows built to break the shortcuts in tests/reports/test_view_search_exact.py):

- numbers, flags and ``problem:`` are numpy comparisons over every candidate at once
  (:mod:`vpo_harness.reports.view.search_index`, kept between searches and extended as the run grows); they
  read no file;
- text terms read the rows that hold the numbers, in file order, in reads of up to 8 MB. A row
  whose line is *plain* (no ``\\u`` escape, no character whose case folding is ASCII) and lacks a
  term's lower-cased bytes cannot match, so one ``find`` over a read passes over every such row;
- a row that holds the bytes is answered from them where :mod:`vpo_harness.reports.view.search_fields` proves
  where its fields are (found once per row and kept), and parsed otherwise. A word in every row's
  text costs a ``find`` per row instead of a parse.

The first search of a run after the viewer started pays for what is kept: the candidates' arrays,
which lines are plain, and the text spans (``python bench/view_scale.py`` prints it apart).
"""
from __future__ import annotations

import bisect
import json
import operator
import re
import shlex
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from vpo_harness.reports.view import search_fields as fields
from vpo_harness.reports.view.samples import RowMeta, SampleIndex
from vpo_harness.reports.view.search_index import PLAIN, STRUCT, SearchIndex, search_index

#: chains per page of search results
PAGE_HITS = 50
#: characters either side of a match in a snippet
SNIPPET = 60
_TEXT_FIELDS = ("text", "answer", "error", "verdict", "problem")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "=": operator.eq}
_RANGE = re.compile(r"^([A-Za-z_][\w.-]*)(>=|<=|>|<|=)(.+)$")
_FLAGS = ("passed", "failed", "error")
#: the most bytes read at once, and the largest gap between two wanted rows read through
_CHUNK = 8 << 20
_GAP = 256 << 10


class QueryError(ValueError):
    """A query that cannot be read (an unknown field, a range on a non-number): one line saying why."""


@dataclass
class Query:
    """A parsed query: free words, text terms by field, ranges (field, op, value) and flags."""

    words: list[str] = field(default_factory=list)
    terms: list[tuple[str, str]] = field(default_factory=list)
    ranges: list[tuple[str, str, float]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.words or self.terms or self.ranges or self.flags)


def parse_query(q: str, components: list[str]) -> Query:
    """Read a query string; ``components`` are the reward names a range may use."""
    try:
        parts = shlex.split(q)
    except ValueError as exc:  # an unclosed quote
        raise QueryError(f"search: {exc} in {q!r}") from None
    out = Query()
    for p in parts:
        m = _RANGE.match(p)
        if m and ":" not in m.group(1):
            name, op, raw = m.groups()
            if name != "score" and name not in components:
                known = ", ".join(["score", *components])
                raise QueryError(f"search: {name!r} is not a score this run has (one of: {known})")
            try:
                value = float(raw)
            except ValueError:
                raise QueryError(f"search: {p!r}: {raw!r} is not a number") from None
            out.ranges.append((name, op, value))
            continue
        name, sep, value = p.partition(":")
        if sep and name.lower() in ("is",):
            if value.lower() not in _FLAGS:
                raise QueryError(f"search: {p!r}: is: takes one of {', '.join(_FLAGS)}")
            out.flags.append(value.lower())
        elif sep and name.lower() in _TEXT_FIELDS:
            if not value:
                raise QueryError(f"search: {p!r}: give a value after the colon")
            out.terms.append((name.lower(), value.casefold()))
        elif sep and name and re.fullmatch(r"[A-Za-z_]+", name):
            raise QueryError(f"search: unknown field {name!r} in {p!r} (fields: {', '.join(_TEXT_FIELDS)}, is:)")
        elif p:
            out.words.append(p.casefold())
    return out


def _cf(v: Any) -> str:
    return v.casefold() if isinstance(v, str) else ""


# Which fields each kind of text term reads (``any`` is a free word): of the chain (all its
# candidates match when one holds) and of the candidate. Both ways of checking a row, on its parsed
# values (_Row) and on its bytes (_FastRow), read these tables, so they cannot disagree on a field.
_CHAIN_FIELDS = {"any": ("text", "error"), "text": ("text",), "error": ("error",), "answer": (), "verdict": ()}
_CAND_FIELDS = {"any": ("answer", "details"), "answer": ("answer",), "error": ("details",),
                "verdict": ("details",), "text": ()}


def _strings(v: Any) -> list[str]:
    if isinstance(v, list):
        return [x for x in v if isinstance(x, str)]
    return [v] if isinstance(v, str) else []


def details_match(kind: str, d: Any, v: str) -> bool:
    """Whether one candidate's task details hold ``v`` for a term of ``kind``: a word looks in its
    verdicts, errors, notes and reason (or the details themselves when they are a string),
    ``error:`` in its errors and reason, ``verdict:`` is one verdict whole."""
    if kind == "verdict":
        return isinstance(d, dict) and any(x.casefold() == v for x in _strings(d.get("verdicts")))
    if not isinstance(d, dict):
        return kind == "any" and isinstance(d, str) and v in d.casefold()
    keys = ("verdicts", "errors", "notes", "reason") if kind == "any" else ("errors", "reason")
    return any(v in x.casefold() for k in keys for x in _strings(d.get(k)))


class _Row:
    """One parsed row, with the per-candidate fields a query reads."""

    def __init__(self, row: dict[str, Any]):
        self.text = row.get("text") if isinstance(row.get("text"), str) else ""
        self.error = row.get("error") if isinstance(row.get("error"), str) else ""
        answers = row.get("answers")
        self.answers = answers if isinstance(answers, list) else []
        details = row.get("details")
        self.details = details if isinstance(details, list) else []
        # case-folded once per row, not once per candidate and term
        self.chain_cf = {"text": _cf(self.text), "error": _cf(self.error)}
        self.answers_cf = [_cf(a) for a in self.answers]

    def chain_has(self, kind: str, v: str) -> bool:
        return any(v in self.chain_cf[f] for f in _CHAIN_FIELDS[kind])

    def cand_has(self, kind: str, v: str, j: int) -> bool:
        for f in _CAND_FIELDS[kind]:
            if f == "answer":
                if j < len(self.answers_cf) and v in self.answers_cf[j]:
                    return True
            elif j < len(self.details) and details_match(kind, self.details[j], v):
                return True
        return False


#: an answers end saying the answers' spans follow the 8 of search_fields.locate
_KEPT = -4


class _FastRow:
    """One row answered from its bytes and field spans (:mod:`vpo_harness.reports.view.search_fields`): exact
    for an ASCII term; None from :meth:`answers` when its answers are not all strings."""

    def __init__(self, raw: bytes, low: bytes, base: int, length: int, sp: Any):
        self.raw, self.low, self.base, self.length, self.sp = raw, low, base, length, sp
        self._answers: list[tuple[int, int]] | None | bool = False
        self._details: list[tuple[int, int]] | None = None

    def _span(self, i: int) -> tuple[int, int]:
        a, e = self.sp[i], self.sp[i + 1]
        if a == fields.LATER:
            if not fields.fill_later(self.raw, self.base, self.base + self.length, self.sp, i):
                raise _Relocate
            a, e = self.sp[i], self.sp[i + 1]
        return a, e

    def chain_has(self, kind: str, nd: bytes) -> bool:
        b = self.base
        for f in _CHAIN_FIELDS[kind]:
            x, e = self._span(fields.TEXT if f == "text" else fields.ERROR)
            if x >= 0 and fields.afind(self.low, nd, b + x, b + e):
                return True
        return False

    def answers(self) -> list[tuple[int, int]] | None:
        """Each answer's span in the read; found once per row, then kept after its 8 spans."""
        if self._answers is False:
            a, e = self._span(fields.ANSWERS)
            sp, b = self.sp, self.base
            if a < 0:
                self._answers = []
            elif e == _KEPT:
                self._answers = [(b + sp[k], b + sp[k + 1]) for k in range(8, len(sp), 2)]
            else:
                self._answers = fields.answer_spans(self.low, b + a, b + e if e >= 0 else -1)
                if self._answers is not None:
                    sp[fields.ANSWERS + 1] = _KEPT
                    sp.extend(x - b for span in self._answers for x in span)
        return self._answers  # type: ignore[return-value]

    def cand_has(self, kind: str, nd: bytes, v: str, j: int) -> bool:
        for f in _CAND_FIELDS[kind]:
            if f == "answer":
                spans = self.answers()
                if spans is not None and j < len(spans) and fields.afind(self.low, nd, *spans[j]):
                    return True
            else:
                if self._details is None:
                    a, e = self._span(fields.DETAILS)
                    try:
                        self._details = [] if a < 0 else fields.values_in(self.raw, self.base + a, self.base + e)
                    except (ValueError, StopIteration):  # a list this walk does not follow
                        raise _Parse from None
                if j < len(self._details):
                    a, e = self._details[j]
                    if self.low.find(nd, a, e) >= 0 and details_match(kind, json.loads(self.raw[a:e].decode("utf-8")), v):
                        return True
        return False


def _snippet(r: _Row, j: int | None, q: Query) -> dict[str, str] | None:
    """Where the first text term matched: the field and the text around the match."""
    wanted = [("any", w) for w in q.words] + [(f, v) for f, v in q.terms if f in ("text", "answer", "error")]
    for f, v in wanted:
        hays = []  # (field name, its text)
        if f in ("any", "answer") and j is not None and j < len(r.answers) and isinstance(r.answers[j], str):
            hays.append(("answer", r.answers[j]))
        if f in ("any", "text"):
            hays.append(("text", r.text))
        if f in ("any", "error"):
            hays.append(("error", r.error))
        for name, hay in hays:
            i = hay.casefold().find(v)
            if i >= 0 and len(hay.casefold()) == len(hay):  # casefold kept positions: the slice is exact
                a, b = max(0, i - SNIPPET), min(len(hay), i + len(v) + SNIPPET)
                return {"field": name, "before": ("…" if a else "") + hay[a:i], "match": hay[i:i + len(v)],
                        "after": hay[i + len(v):b] + ("…" if b < len(hay) else "")}
            if i >= 0:
                return {"field": name, "before": "", "match": "", "after": hay[:2 * SNIPPET]}
    return None


class _Parse(Exception):
    """A row its bytes cannot answer after all (an answer that is not a string): parse it."""


class _Relocate(Exception):
    """A row whose needed field :func:`vpo_harness.reports.view.search_fields.locate_many` left for later."""


def _numbers(q: Query, si: SearchIndex, comp: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """Ranges, flags and problem terms over every candidate at once: (per candidate, and per row
    for the rows without candidates, which only ``is:error`` and ``problem:`` can match)."""
    if q.ranges or {"passed", "failed"} & set(q.flags):
        si.numbers()
    ok = si.live.copy()
    row_ok = si.count == 0
    probs = [v for f, v in q.terms if f == "problem"]
    if probs:
        p_ok = np.array([all(v in pid.casefold() for v in probs) for pid in si.problems] or [False], bool)
        by_row = p_ok[si.problem] if si.problem.size else np.zeros(0, bool)
        row_ok &= by_row
        ok &= by_row[si.slot]
    for f in q.flags:
        if f == "error":
            row_ok &= si.error
            ok &= si.error[si.slot]
        else:
            row_ok[:] = False
            ok &= si.passed == (1 if f == "passed" else 0)
    if q.ranges:
        row_ok[:] = False
    with np.errstate(invalid="ignore"):
        for name, op, value in q.ranges:
            x = si.score if name == "score" else si.reward(comp[name])
            ok &= _OPS[op](x, value)
    return ok, row_ok


def _chunks(order: np.ndarray, si: SearchIndex) -> list[tuple[int, int, list[int], list[int], list[int]]]:
    """The rows ``order`` (sorted by offset) grouped into reads of at most _CHUNK bytes, a read
    spanning gaps of up to _GAP bytes between rows: (start, end, rows, their starts and ends in
    the read)."""
    off = si.offset[order]
    end = off + si.length[order]
    out = []
    cut = np.flatnonzero(off[1:] - end[:-1] > _GAP) + 1
    for seg_a, seg_b in zip(np.concatenate(([0], cut)), np.concatenate((cut, [len(order)]))):
        i = int(seg_a)
        while i < seg_b:
            k = max(i + 1, int(np.searchsorted(end[i:seg_b], off[i] + _CHUNK, "right")) + i)
            lo, hi = int(off[i]), int(end[k - 1])
            out.append((lo, hi, order[i:k].tolist(), (off[i:k] - lo).tolist(), (end[i:k] - lo).tolist()))
            i = k
    return out


def _text_terms(q: Query) -> list[tuple[str, str, bytes | None]]:
    """(kind, case-folded value, its bytes when ASCII) for the words and the field terms but problem:."""
    return [(kind, v, fields.needle(v)) for kind, v in [("any", w) for w in q.words] + q.terms if kind != "problem"]


def _match_rows(path: Any, si: SearchIndex, rows: list[RowMeta], order: np.ndarray, ok: list[bool],
                terms: list[tuple[str, str, bytes | None]]) -> dict[int, list[int] | None]:
    """The rows of ``order`` (sorted by offset) with a candidate that holds every text term, reading
    their bytes once in file order: each to None when all its candidates that hold the numbers do
    (the term was in the chain's own text or error: a row without candidates matches so), else to
    the list of those that do (flat indices)."""
    out: dict[int, list[int] | None] = {}
    first, count = si.first.tolist(), si.count.tolist()
    spans, span_meta = si.spans, si.span_meta
    nd0 = terms[0][2]
    n0 = len(nd0 or b"")
    single_text = len(terms) == 1 and nd0 is not None and terms[0][0] in ("any", "text")
    with open(path, "rb") as fh:
        for lo, hi, chunk, starts, ends in _chunks(order, si):
            fh.seek(lo)
            raw = fh.read(hi - lo)
            if len(raw) < hi - lo:
                break  # the file was cut since it was indexed: the next refresh starts again
            low = raw.lower()
            unknown = [i for i, s in enumerate(chunk) if span_meta[s] is not rows[s]]
            if unknown:  # first seen: is its line plain (point 3 of search_fields)?
                for i, pl in zip(unknown, fields.plain_lines(raw, [(starts[i], ends[i]) for i in unknown])):
                    spans[chunk[i]], span_meta[chunk[i]] = (PLAIN if pl else None), rows[chunk[i]]
            if nd0 is not None:  # a plain line without the first term's bytes cannot match
                at = _holding(low, nd0, starts, ends)
                for i, s in enumerate(chunk):
                    if spans[s] is None and i not in at:
                        at[i] = -1
                todo = sorted(at)
            else:
                at, todo = {}, list(range(len(chunk)))
            new = [i for i in todo if spans[chunk[i]] is PLAIN]
            if new:
                for i, sp in zip(new, fields.locate_many(raw, [(starts[i], ends[i]) for i in new], [True] * len(new))):
                    spans[chunk[i]] = sp if sp is not None else STRUCT
            for i in todo:
                s = chunk[i]
                sp = spans[s]
                a, b = starts[i], ends[i]
                if single_text and type(sp) is array:  # the common case, inline: is the first hit in the text?
                    p, t = at[i], sp[fields.TEXT]
                    if t >= 0 and a + t <= p and p + n0 <= a + sp[fields.TEXT + 1] and low[p - 1] != 0x5C:
                        out[s] = None
                        continue
                p = at.get(i, -1)
                try:
                    try:
                        got = _match_row(raw, low, a, b - a, sp if sp is not STRUCT else None, first[s], count[s],
                                         ok, terms, p)
                    except _Relocate:
                        sp = spans[s] = fields.locate(raw[a:b]) or STRUCT
                        got = _match_row(raw, low, a, b - a, sp if sp is not STRUCT else None, first[s], count[s],
                                         ok, terms, p)
                except _Parse:
                    got = _match_row(raw, low, a, b - a, None, first[s], count[s], ok, terms, -1)
                if got != []:
                    out[s] = got
    return out


def _holding(low: bytes, nd: bytes, starts: list[int], ends: list[int]) -> dict[int, int]:
    """The lines (indices into ``starts``/``ends``, sorted) whose bytes hold ``nd``, each with the
    first position: one ``find`` per line that holds it, whatever the number that do not."""
    out = {}
    pos = low.find(nd)
    while pos >= 0:
        i = bisect.bisect_right(starts, pos) - 1
        if i >= 0 and pos + len(nd) <= ends[i]:
            out[i] = pos
            nxt = ends[i]
        else:  # between the wanted lines (a superseded or unwanted one): on to the next wanted line
            if i + 1 >= len(starts):
                break
            nxt = starts[i + 1]
        pos = low.find(nd, nxt)
    return out


def _match_row(raw: bytes, low: bytes, base: int, length: int, sp: Any, f0: int, n: int, ok: list[bool],
               terms: list[tuple[str, str, bytes | None]], p0: int) -> list[int] | None:
    """One row's candidates (flat indices) that hold every term, None for all that hold the
    numbers: from its bytes where its spans are known and the term is ASCII, from its parsed values
    otherwise. ``p0``: where the first term's bytes first are in the line, when known (else -1)."""
    cands: list[int] | None = None
    fast: _FastRow | None = None
    parsed: _Row | None = None
    for t, (kind, v, nd) in enumerate(terms):
        if sp is not None and nd is not None:
            p = p0 if t == 0 and p0 >= 0 else low.find(nd, base, base + length)
            if p < 0:
                return []  # a plain line without the term's bytes: no field of it holds the term
            a = sp[fields.TEXT]
            if (a >= 0 and kind in ("any", "text") and base + a <= p and p + len(nd) <= base + sp[fields.TEXT + 1]
                    and low[p - 1] != 0x5C):
                continue  # the first occurrence is in the text, on a character boundary
            if fast is None:
                fast = _FastRow(raw, low, base, length, sp)
            if fast.chain_has(kind, nd):
                continue
            if "answer" in _CAND_FIELDS[kind] and fast.answers() is None:
                raise _Parse
            if cands is None:
                cands = [c for c in range(f0, f0 + n) if ok[c]]
            cands = [c for c in cands if fast.cand_has(kind, nd, v, c - f0)]
        else:
            if parsed is None:
                parsed = _Row(json.loads(raw[base:base + length].decode("utf-8")))
            if parsed.chain_has(kind, v):
                continue
            if cands is None:
                cands = [c for c in range(f0, f0 + n) if ok[c]]
            cands = [c for c in cands if parsed.cand_has(kind, v, c - f0)]
        if not cands:
            return []
    return cands


def _read(path: Any, metas: list[RowMeta]) -> list[dict[str, Any]]:
    with open(path, "rb") as fh:
        out = []
        for m in metas:
            fh.seek(m.offset)
            out.append(json.loads(fh.read(m.length).decode("utf-8")))
        return out


def search(ix: SampleIndex, q: Query, components: list[str], page: int = 0, per: int = PAGE_HITS,
           problem: str | None = None) -> dict[str, Any]:
    """The chains of ``ix`` with a candidate matching ``q`` (file order), one page of them with the
    matching candidates' numbers and a snippet, and the totals."""
    comp = {n: i for i, n in enumerate(components)}
    si = search_index(ix)
    with si.lock:
        rows = si.sync(ix)
        ok, row_ok = _numbers(q, si, comp)
        if problem:
            p_slots = ix.problem_slots(problem)
            in_problem = np.zeros(len(rows), bool)
            in_problem[[s for s in p_slots if s < len(rows)]] = True
            row_ok &= in_problem
            ok &= in_problem[si.slot]
        terms = _text_terms(q)
        per_row = np.bincount(si.slot[ok], minlength=len(rows))  # candidates holding the numbers, per row
        wanted = np.flatnonzero((per_row > 0) | row_ok)
        if terms:
            order = wanted[np.argsort(si.offset[wanted], kind="stable")]
            matched = _match_rows(ix.path, si, rows, order, ok.tolist(), terms)
            hit_slots = sorted(matched)
            whole = [s for s, c in matched.items() if c is None]
            n_cands = int(per_row[whole].sum()) + sum(len(c) for c in matched.values() if c is not None)
        else:
            matched = {}
            hit_slots = wanted.tolist()
            n_cands = int(per_row.sum())
        chosen = hit_slots[page * per:(page + 1) * per]
        f0 = {s: int(si.first[s]) for s in chosen}  # a page's rows only: no list of every row per search
        good = {}
        for s in chosen:  # None: every candidate of the row that holds the numbers
            c = matched.get(s)
            a = f0[s]
            good[s] = c if c is not None else (np.flatnonzero(ok[a:a + int(si.count[s])]) + a).tolist()
    metas = [rows[s] for s in chosen]
    parsed = _read(ix.path, metas) if chosen else []  # an empty page opens no file
    out = []
    for s, m, row in zip(chosen, metas, parsed):
        r = _Row(row)
        js = [c - f0[s] for c in good[s] if c >= 0]
        cands = [{"index": j, "answer": r.answers[j] if j < len(r.answers) else None,
                  "scalar": m.scalars[j] if j < len(m.scalars) else None,
                  "passed": bool(m.passed[j]) if j < len(m.passed) else None,
                  "snippet": _snippet(r, j, q)} for j in js]
        out.append({"problem_id": m.problem_id, "chain_index": m.chain_index, "line": m.lineno,
                    "error": r.error or None, "iteration": m.iteration, "program_id": m.program_id,
                    "snippet": _snippet(r, None, q) if not cands else None, "candidates": cands})
    return {"total_chains": len(hit_slots), "total_candidates": n_cands, "page": page, "per": per,
            "searched_chains": len(p_slots) if problem else len(rows), "hits": out}
