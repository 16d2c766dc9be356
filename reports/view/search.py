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

Why it is fast on a large run: numbers and flags are answered from the index alone (no file read).
Text terms first look for their JSON-encoded, lower-cased bytes in one read of the file: a row
whose bytes do not hold every term cannot match, so only the rows that do are parsed and checked
field by field. A rare word costs one read of the file; a word in every row costs about one parse of
it, as reading the file once.
"""
from __future__ import annotations

import bisect
import json
import operator
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Callable

from reports.view.samples import RowMeta, SampleIndex

#: chains per page of search results
PAGE_HITS = 50
#: characters either side of a match in a snippet
SNIPPET = 60
_TEXT_FIELDS = ("text", "answer", "error", "verdict", "problem")
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "=": operator.eq}
_RANGE = re.compile(r"^([A-Za-z_][\w.-]*)(>=|<=|>|<|=)(.+)$")
_FLAGS = ("passed", "failed", "error")


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

    def needles(self) -> list[bytes]:
        """Byte strings every matching row's stored line must contain (lower-cased JSON text).
        Terms with non-ASCII letters are left out: ``bytes.lower`` only folds ASCII, so their case
        could differ in the file; the field check still applies them."""
        out = []
        for t in self.words + [v for f, v in self.terms if f != "problem"]:
            enc = json.dumps(t, ensure_ascii=False)[1:-1]
            if enc.isascii() and enc:
                out.append(enc.lower().encode("ascii"))
        return out


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


def _has(hay: Any, needle: str) -> bool:
    return isinstance(hay, str) and needle in hay.casefold()


def _cf(v: Any) -> str:
    return v.casefold() if isinstance(v, str) else ""


def _details_texts(d: Any) -> list[str]:
    """The searchable texts of one candidate's task details."""
    if not isinstance(d, dict):
        return [d] if isinstance(d, str) else []
    out = [v for v in d.get("verdicts") or [] if isinstance(v, str)]
    out += [v for v in d.get("errors") or [] if isinstance(v, str)]
    out += [v for v in d.get("notes") or [] if isinstance(v, str)]
    if isinstance(d.get("reason"), str):
        out.append(d["reason"])
    return out


class _Row:
    """One parsed row, with the per-candidate fields a query reads."""

    def __init__(self, row: dict[str, Any]):
        self.row = row
        self.text = row.get("text") if isinstance(row.get("text"), str) else ""
        self.error = row.get("error") if isinstance(row.get("error"), str) else ""
        answers = row.get("answers")
        self.answers = answers if isinstance(answers, list) else []
        details = row.get("details")
        self.details = details if isinstance(details, list) else []
        # case-folded once per row, not once per candidate and term
        self.text_cf, self.error_cf = _cf(self.text), _cf(self.error)
        self.answers_cf = [_cf(a) for a in self.answers]

    def answer_has(self, j: int, v: str) -> bool:
        return j < len(self.answers_cf) and v in self.answers_cf[j]

    def detail(self, j: int) -> Any:
        return self.details[j] if j < len(self.details) else None


def _text_term(r: _Row, j: int | None, name: str, v: str, pid: str) -> bool:
    d = r.detail(j) if j is not None else None
    if name == "problem":
        return True  # checked from the index (_numbers_hold)
    if name == "text":
        return v in r.text_cf
    if name == "answer":
        return j is not None and r.answer_has(j, v)
    if name == "error":
        return v in r.error_cf or any(_has(t, v) for t in (d.get("errors") or []) + [d.get("reason")]
                                       if isinstance(d, dict))
    if name == "verdict":
        return isinstance(d, dict) and any(isinstance(x, str) and x.casefold() == v for x in d.get("verdicts") or [])
    raise AssertionError(name)


def _word(r: _Row, j: int | None, v: str) -> bool:
    if v in r.text_cf or v in r.error_cf:
        return True
    if j is None:
        return False
    return r.answer_has(j, v) or any(_has(t, v) for t in _details_texts(r.detail(j)))


def _numbers_hold(q: Query, m: RowMeta, j: int | None, comp: dict[str, int]) -> bool:
    """Ranges, flags and problem terms, from the index alone; ``j`` None is a chain without candidates."""
    for f, v in q.terms:
        if f == "problem" and v not in m.problem_id.casefold():
            return False
    for f in q.flags:
        if f == "error":
            if not m.error:
                return False
        elif j is None or j >= len(m.passed) or bool(m.passed[j]) != (f == "passed"):
            return False
    for name, op, value in q.ranges:
        if j is None:
            return False
        try:
            x = m.scalars[j] if name == "score" else m.rewards[j][comp[name]]
            if not _OPS[op](float(x), value):
                return False
        except (IndexError, TypeError, ValueError):
            return False
    return True


def _candidates(m: RowMeta) -> list[int | None]:
    n = len(m.scalars)
    return list(range(n)) if n else [None]


def _prefilter(ix: SampleIndex, slots: list[int], needles: list[bytes], raw: bytes) -> list[int]:
    """The slots whose stored line (in ``raw``, the file's bytes) holds every needle: ``bytes.find``
    per needle over the lower-cased file."""
    if not needles:
        return slots
    order = sorted(slots, key=lambda s: ix.rows[s].offset)
    starts = [ix.rows[s].offset for s in order]
    low = raw.lower()
    keep: set[int] | None = None
    for nd in needles:
        hit: set[int] = set()
        pos = low.find(nd)
        while pos >= 0:
            i = bisect.bisect_right(starts, pos) - 1
            if i >= 0:
                m = ix.rows[order[i]]
                if pos + len(nd) <= m.offset + m.length:  # inside this (current) row, not a superseded line
                    hit.add(order[i])
                    pos = low.find(nd, m.offset + m.length)  # the next row: one hit per row is enough
                    continue
            pos = low.find(nd, pos + 1)
        keep = hit if keep is None else keep & hit
        if not keep:
            return []
    return [s for s in slots if s in keep]


def _snippet(r: _Row, j: int | None, q: Query) -> dict[str, str] | None:
    """Where the first text term matched: the field and the text around the match."""
    wanted = [("any", w) for w in q.words] + [(f, v) for f, v in q.terms if f in ("text", "answer", "error")]
    for f, v in wanted:
        fields = []
        if f in ("any", "answer") and j is not None and j < len(r.answers) and isinstance(r.answers[j], str):
            fields.append(("answer", r.answers[j]))
        if f in ("any", "text"):
            fields.append(("text", r.text))
        if f in ("any", "error"):
            fields.append(("error", r.error))
        for name, hay in fields:
            i = hay.casefold().find(v)
            if i >= 0 and len(hay.casefold()) == len(hay):  # casefold kept positions: the slice is exact
                a, b = max(0, i - SNIPPET), min(len(hay), i + len(v) + SNIPPET)
                return {"field": name, "before": ("…" if a else "") + hay[a:i], "match": hay[i:i + len(v)],
                        "after": hay[i + len(v):b] + ("…" if b < len(hay) else "")}
            if i >= 0:
                return {"field": name, "before": "", "match": "", "after": hay[:2 * SNIPPET]}
    return None


def search(ix: SampleIndex, q: Query, components: list[str], page: int = 0, per: int = PAGE_HITS,
           problem: str | None = None) -> dict[str, Any]:
    """The chains of ``ix`` with a candidate matching ``q`` (file order), one page of them with the
    matching candidates' numbers and a snippet, and the totals."""
    comp = {n: i for i, n in enumerate(components)}
    slots = ix.problem_slots(problem) if problem else list(range(len(ix.rows)))
    needs_text = bool(q.words or [f for f, _ in q.terms if f != "problem"])
    # numbers and flags first: they cost nothing
    pre = [s for s in slots if any(_numbers_hold(q, ix.rows[s], j, comp) for j in _candidates(ix.rows[s]))]
    parsed: dict[int, _Row] = {}
    if needs_text and pre:
        with open(ix.path, "rb") as fh:  # one read; the rows are parsed from it, not seeked one by one
            raw = fh.read(ix.scanned_to)
        pre = _prefilter(ix, pre, q.needles(), raw)
        pre = [s for s in pre if ix.rows[s].offset + ix.rows[s].length <= len(raw)]  # rows indexed since the read wait
        for s in pre:
            m = ix.rows[s]
            parsed[s] = _Row(json.loads(raw[m.offset:m.offset + m.length].decode("utf-8")))
    hits: list[tuple[int, list[int | None]]] = []
    n_cands = 0
    for s in pre:
        m = ix.rows[s]
        r = parsed.get(s)
        good = []
        for j in _candidates(m):
            if not _numbers_hold(q, m, j, comp):
                continue
            if r is not None and not (all(_word(r, j, w) for w in q.words)
                                      and all(_text_term(r, j, f, v, m.problem_id) for f, v in q.terms)):
                continue
            good.append(j)
        if good:
            hits.append((s, good))
            n_cands += sum(j is not None for j in good)
    chosen = hits[page * per:(page + 1) * per]
    rows = ix.read([s for s, _ in chosen]) if chosen else []  # an empty page opens no file
    out = []
    for (s, good), row in zip(chosen, rows):
        m, r = ix.rows[s], _Row(row)
        cands = [{"index": j, "answer": r.answers[j] if j < len(r.answers) else None,
                  "scalar": m.scalars[j] if j < len(m.scalars) else None,
                  "passed": bool(m.passed[j]) if j < len(m.passed) else None,
                  "snippet": _snippet(r, j, q)} for j in good if j is not None]
        out.append({"problem_id": m.problem_id, "chain_index": m.chain_index, "line": m.lineno,
                    "error": r.error or None, "iteration": m.iteration, "program_id": m.program_id,
                    "snippet": _snippet(r, None, q) if not cands else None, "candidates": cands})
    return {"total_chains": len(hits), "total_candidates": n_cands, "page": page, "per": per,
            "searched_chains": len(slots), "hits": out}
