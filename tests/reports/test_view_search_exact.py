"""The viewer's search answers from row bytes and field spans where it can prove them
(reports/view/search_fields.py) and kept arrays (reports/view/search_index.py): its results must be
exactly those of parsing every row, on rows built to break the byte shortcuts (escapes, backslash
runs, non-ASCII case folding, braces and keys inside texts, duplicate keys, nested details, other
writers' spacing and key order, retried chains, failed generations) and after the file grows or is
replaced."""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from vpo_harness.harness.core.store import dumps
from vpo_harness.reports.view.samples import SampleIndex
from vpo_harness.reports.view.search import parse_query, search
from vpo_harness.reports.view.search_fields import ANSWERS, LATER, afind, locate, locate_many, plain_lines

NAMES = ["c0", "c1"]
# pieces of text chosen to trip the byte path: escapes and runs of backslashes, quotes, keys and
# braces inside texts, characters whose case folding is ASCII (ß -> ss, Kelvin K -> k, ﬁ -> fi,
# İ -> i + dot), other non-ASCII, a control character (written as \u0001) and a lone surrogate
PIECES = ["right", "RIGHT", "Left", "up", "down", "n", "rn", "\n", "\r", "\t", "\\", "\\\\", "\\n", '"', '\\"',
          '"text": "', '"error": "x"', '{"a": 1}', "{", "}", "[", "]", ", ", ": ", "u00e9", "é", "É", "ss",
          "STRASSE", "k", "file", "i", "’", "中文", "école", "ÉCOLE", " ", "x"]
FOLDS = ["ß", "\u212a", "ﬁle", "İ", "\x01"]  # rows holding these are parsed: rarer, so most rows take the byte path
VERDICTS = ["pass", "WA", "TLE", "RE", "tle"]


#: pieces without braces, folds or \u escapes: whole runs of such lines take the quicker path of
#: search_fields.locate_many, which must prove the same as locate
CLEAN = [x for x in PIECES if "{" not in x and "}" not in x] + ["text", "error"]
_pieces = {"pieces": PIECES}


def _text(rng: random.Random, surrogate: bool = True) -> str:
    pieces = _pieces["pieces"]
    clean = pieces is CLEAN
    s = "".join(rng.choice(FOLDS if rng.random() < 0.02 and not clean else pieces) for _ in range(rng.randint(0, 8)))
    return s + "\ud800" if surrogate and not clean and rng.random() < 0.05 else s


def _row(rng: random.Random, pid: str, c: int) -> dict:
    if rng.random() < 0.1:  # a failed generation: no candidates
        return {"problem_id": pid, "chain_index": c, "text": _text(rng), "error": "HTTP 500 " + _text(rng),
                "answers": [], "rewards": [], "scalars": [], "passed": []}
    m = rng.randint(1, 3)
    row = {"problem_id": pid, "chain_index": c, "seed": c, "text": _text(rng),
           "answers": [_text(rng) for _ in range(m)], "rewards": [[rng.random(), float(rng.random() < 0.5)] for _ in range(m)],
           "scalars": [round(rng.random(), 3) for _ in range(m)], "passed": [rng.random() < 0.4 for _ in range(m)],
           "error": _text(rng) if rng.random() < 0.2 else None}
    if rng.random() < 0.1:
        row["answers"][0] = None  # an answer the parser did not find
    if rng.random() < 0.4 and _pieces["pieces"] is not CLEAN:
        row["details"] = [{"verdicts": [rng.choice(VERDICTS) for _ in range(2)], "times": [0.1],
                           **({"errors": [_text(rng)]} if rng.random() < 0.5 else {}),
                           **({"notes": [_text(rng)], "reason": _text(rng)} if rng.random() < 0.3 else {}),
                           **({"text": _text(rng), "error": _text(rng)} if rng.random() < 0.2 else {})}
                          if rng.random() < 0.85 else _text(rng) for _ in range(m)]
    r = rng.random() * (1 if _pieces["pieces"] is PIECES else 2.5)  # clean runs: rarer, so more runs pass
    if r < 0.02:  # no text of its own, a "text" key one level down
        row["meta"] = {"text": row.pop("text")}
    elif r < 0.06:  # no text (or error) of its own, a key that ends in "text (or "error)
        key = "text" if r < 0.04 else "error"
        row[f'say "{key}'] = row.pop(key, None) or _text(rng)
    if rng.random() < 0.2:  # another writer's key order
        keys = list(row)
        rng.shuffle(keys)
        row = {k: row[k] for k in keys}
    return row


def _line(rng: random.Random, row: dict) -> str:
    r = rng.random() * (1 if _pieces["pieces"] is PIECES else 12)  # clean runs: a rarer line of another writer
    ascii_only = rng.random() < 0.5 or dumps(row).isascii()  # raw text with a lone surrogate is no UTF-8
    if r < 0.1:
        return json.dumps(row, separators=(",", ":"), ensure_ascii=ascii_only)
    if r < 0.15:
        return json.dumps(row, separators=(" , ", " : "), ensure_ascii=ascii_only)
    if r < 0.2:  # a duplicate key: json keeps the last one
        key = rng.choice(["text", "error", "answers"])
        value = [_text(rng, surrogate=False) for _ in row.get("scalars") or []] if key == "answers" else \
            _text(rng, surrogate=False)
        return dumps(row)[:-1] + f', "{key}": ' + json.dumps(value, ensure_ascii=False) + "}"
    return dumps(row)


def _write(path: Path, rng: random.Random, problems: int, chains: int, retries: int, mode: str = "w") -> None:
    lines = [_line(rng, _row(rng, f"p{p}", c)) for p in range(problems) for c in range(chains)]
    lines += [_line(rng, _row(rng, f"p{rng.randrange(problems)}", rng.randrange(chains))) for _ in range(retries)]
    with open(path, mode, encoding="utf-8") as fh:
        fh.write("".join(ln + "\n" for ln in lines))


def _cf(v) -> str:
    return v.casefold() if isinstance(v, str) else ""


def _strs(v) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else [v] if isinstance(v, str) else []


def _holds(row: dict, j: int | None, kind: str, v: str) -> bool:
    """One term on one candidate (``j`` None: a chain without candidates), written out plainly."""
    text, err = _cf(row.get("text")), _cf(row.get("error"))
    answers = row.get("answers") if isinstance(row.get("answers"), list) else []
    details = row.get("details") if isinstance(row.get("details"), list) else []
    ans = _cf(answers[j]) if j is not None and j < len(answers) else ""
    d = details[j] if j is not None and j < len(details) else None
    dd = d if isinstance(d, dict) else {}
    if kind == "text":
        return v in text
    if kind == "answer":
        return v in ans
    if kind == "verdict":
        return any(x.casefold() == v for x in _strs(dd.get("verdicts")))
    if kind == "error":
        return v in err or any(v in x.casefold() for k in ("errors", "reason") for x in _strs(dd.get(k)))
    det = [x.casefold() for k in ("verdicts", "errors", "notes", "reason") for x in _strs(dd.get(k))] + \
        ([d.casefold()] if isinstance(d, str) else [])
    return v in text or v in err or v in ans or any(v in x for x in det)


def _brute(path: Path, q: str) -> tuple[set, set]:
    """Every latest row parsed: the matching candidates and the matching chains without any."""
    latest: dict[tuple, dict] = {}
    for ln in path.read_text(encoding="utf-8").splitlines():
        r = json.loads(ln)
        latest[(r["problem_id"], r["chain_index"])] = r
    query = parse_query(q, NAMES)
    terms = [("any", w) for w in query.words] + [t for t in query.terms if t[0] != "problem"]
    cands, bare = set(), set()
    for (pid, c), r in latest.items():
        if any(v not in pid.casefold() for f, v in query.terms if f == "problem"):
            continue
        n = 0 if r.get("error") else len(r["scalars"])  # a chain whose generation failed has no candidates
        for j in range(n) if n else [None]:
            if j is None and (query.ranges or {"passed", "failed"} & set(query.flags)):
                continue
            if "error" in query.flags and not r.get("error"):
                continue
            if j is not None and any(bool(r["passed"][j]) != (f == "passed") for f in query.flags if f != "error"):
                continue
            if j is not None and not all(_cmp(r["scalars"][j] if name == "score" else r["rewards"][j][NAMES.index(name)], op, x)
                                         for name, op, x in query.ranges):
                continue
            if all(_holds(r, j, kind, v) for kind, v in terms):
                (cands.add((pid, c, j)) if j is not None else bare.add((pid, c)))
    return cands, bare


def _cmp(a: float, op: str, b: float) -> bool:
    return {">": a > b, "<": a < b, ">=": a >= b, "<=": a <= b, "=": a == b}[op]


def _found(ix: SampleIndex, q: str, per: int = 7) -> tuple[set, set, dict]:
    query = parse_query(q, NAMES)
    first = search(ix, query, NAMES, page=0, per=per)
    cands, bare = set(), set()
    for page in range(first["total_chains"] // per + 1):
        for h in search(ix, query, NAMES, page=page, per=per)["hits"]:
            if h["candidates"]:
                cands |= {(h["problem_id"], h["chain_index"], c["index"]) for c in h["candidates"]}
            else:
                bare.add((h["problem_id"], h["chain_index"]))
    return cands, bare, first


def _queries(rng: random.Random) -> list[str]:
    words = ["right", "RIGHT", "rn", "n", "ss", "strasse", "k", "fi", "file", "i", "é", "école", "u00e9", "x",
             "text", "error", "pass", "tle", "中", "’", "null", "0.5", "true", "verdicts"]
    out = words + ["'\"text\": \"'", "'\\\\'", "'\\n'", "'\"'", "'right\nleft'", "'up down'", "text:n", "text:ss",
                   "answer:right", "answer:k", "answer:null", "error:x", "error:500", "verdict:tle", "verdict:TLE",
                   "verdict:t", "problem:p1", "is:error", "is:error http", "score>0.5 right", "c1>=1 is:failed x",
                   "is:passed answer:e", "right left", "score<0.2", "c0<0.5 is:passed"]
    return out + [rng.choice(words) + " " + rng.choice(words) for _ in range(10)]


@pytest.mark.parametrize("pieces", ["hostile", "clean"])
def test_search_is_exactly_a_parse_of_every_row(tmp_path, monkeypatch, pieces):
    monkeypatch.setitem(_pieces, "pieces", PIECES if pieces == "hostile" else CLEAN)
    rng = random.Random(7)
    path = tmp_path / "samples.jsonl"
    _write(path, rng, problems=6, chains=40 if pieces == "hostile" else 120, retries=30)
    ix = SampleIndex(path).refresh()
    assert not ix.warnings
    raw = path.read_bytes()
    bounds = [(m.offset, m.offset + m.length) for m in ix.rows]
    spans = [locate(raw[a:b]) for a, b in bounds]
    fast = sum(s is not None for s in spans)
    assert 0.2 * len(spans) < fast < (0.95 if pieces == "hostile" else 0.999) * len(spans)  # both paths are taken
    if pieces == "clean":  # and runs of lines proven together
        order = sorted(bounds)
        quick = locate_many(raw, order, plain_lines(raw, order))
        assert sum(q is not None and q[ANSWERS] == LATER for q in quick) > 0.08 * len(quick)
        assert all((q is None) == (locate(raw[a:b]) is None) or q[ANSWERS] == LATER for q, (a, b) in zip(quick, order))
        assert all(q[:2] == locate(raw[a:b])[:2] for q, (a, b) in zip(quick, order) if q is not None and q[ANSWERS] == LATER)
    for q in _queries(rng):
        cands, bare, first = _found(ix, q)
        want_cands, want_bare = _brute(path, q)
        assert (cands, bare) == (want_cands, want_bare), q
        assert first["total_candidates"] == len(want_cands) and first["total_chains"] == len({k[:2] for k in want_cands} | want_bare), q


def test_search_follows_appends_retries_and_a_replaced_file(tmp_path):
    rng = random.Random(11)
    path = tmp_path / "samples.jsonl"
    _write(path, rng, problems=3, chains=20, retries=0)
    ix = SampleIndex(path).refresh()
    queries = ["right", "answer:k", "score>0.5 n", "is:error", "verdict:tle x"]
    for q in queries:
        _found(ix, q)  # builds the arrays and spans
    _write(path, rng, problems=3, chains=25, retries=40, mode="a")  # a run still writing, retrying chains
    ix.refresh()
    for q in queries:
        assert _found(ix, q)[:2] == _brute(path, q), q
    _write(path, rng, problems=2, chains=5, retries=0)  # replaced by a shorter file: the index starts again
    ix.refresh()
    for q in queries:
        assert _found(ix, q)[:2] == _brute(path, q), q


def test_locate_proves_spans_or_declines():
    row = {"problem_id": "p", "chain_index": 0, "text": 'a "b" {c}', "answers": ["x", "y"], "scalars": [1, 0],
           "details": [{"verdicts": ["AC"], "text": "nested"}, {"error": "e"}], "error": "boom"}
    line = dumps(row).encode()
    sp = locate(line)
    assert sp is not None
    assert json.loads(b'"' + line[sp[0]:sp[1]] + b'"') == row["text"] and line[sp[2]:sp[3]] == b"boom"
    assert sp[5] >= 0 and json.loads(line[sp[4]:sp[5]]) == row["answers"]  # found at once: the text has braces
    assert json.loads(line[sp[6]:sp[7]]) == row["details"]
    declined = [dict(row, details={"text": "x"}),  # an object outside the details list
                dict(row, text="\ud800"), dict(row, text="Straße"),  # a \u escape; a fold to ASCII
                dict(row, meta={"a": 1})]
    for r in declined:
        assert locate(dumps(r).encode()) is None, r
    assert locate(dumps(row).replace('"error": "boom"', '"error": "boom", "text": "again"').encode()) is None  # duplicate
    assert locate(dumps(dict(row, text="école ’")).encode()) is not None  # non-ASCII that folds to non-ASCII
    odd = {"problem_id": "p", "chain_index": 0, 'say "text': "not the text", "answers": [], "scalars": []}
    sp = locate(dumps(odd).encode())  # a key ending in "text is not the text key
    assert sp is not None and sp[0] == -1


def test_afind_is_on_character_boundaries():
    low = json.dumps("\n" + "\\n" + "\\\\n")[1:-1].encode()  # \n, then \\n, then \\\\n
    assert low == b"\\n\\\\n\\\\\\\\n"
    hits = [afind(low, b"n", a, len(low)) for a in (0, 2, 5)]
    assert hits == [True, True, True]
    assert not afind(low, b"n", 0, 2)  # only the tail of the escape \n
    assert afind(low, b"\\\\n", 0, len(low))  # backslash then n, at a boundary


def test_numbers_of_hand_edited_rows_are_read_as_float_reads_them(tmp_path):
    """A score or reward that ``float()`` reads (a string "0.7", true) counts as that number, one
    it cannot read (null, a word, a list) matches no range; a missing pass matches neither flag."""
    rows = [{"problem_id": "p", "chain_index": 0, "text": "a", "answers": ["x", "y", "z"],
             "scalars": ["0.7", None, True], "rewards": [[1, "0.2"], [0.5], "ab"], "passed": [True]},
            {"problem_id": "p", "chain_index": 1, "text": "b", "answers": ["x"], "scalars": [0.4, 0.9],
             "rewards": [[0.1, 0.9, 0.3], [[1], 2]], "passed": [False, True, True]},
            {"problem_id": "q", "chain_index": 0, "text": "c", "answers": ["x"], "scalars": [2],
             "rewards": [[0.6, 1]], "passed": ["yes"]}]
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ix = SampleIndex(path).refresh()

    def num(x) -> float | None:
        try:
            return float(x)
        except (TypeError, ValueError):
            return None

    def value(r, j, name):
        try:
            return num(r["scalars"][j] if name == "score" else r["rewards"][j][NAMES.index(name)])
        except (IndexError, TypeError):
            return None

    for q in ["score>0.5", "score=1", "score<=0.4", "c0>=0.5", "c1<0.5", "c1>0", "is:passed", "is:failed",
              "score>0 is:passed", "c1>=1 x"]:
        query = parse_query(q, NAMES)
        want = set()
        for r in rows:
            for j in range(len(r["scalars"])):
                ps = r["passed"][j] if j < len(r["passed"]) else None
                if any(ps is None or bool(ps) != (f == "passed") for f in query.flags):
                    continue
                if all((x := value(r, j, n)) is not None and _cmp(x, op, v) for n, op, v in query.ranges) and \
                        all(w in r["text"] or (j < len(r["answers"]) and w in r["answers"][j]) for w in query.words):
                    want.add((r["problem_id"], r["chain_index"], j))
        assert _found(ix, q)[0] == want, q


def test_runs_whose_texts_hold_braces_are_proven_together(tmp_path):
    """Code in the texts puts braces in every line: they are strings, so a run is still proven at
    once; a line with an object besides the row (and a "text" key in it) is not."""
    rng = random.Random(3)
    path = tmp_path / "samples.jsonl"
    rows = []
    for c in range(150):
        row = {"problem_id": "p", "chain_index": c, "text": "def f():\n    return {'k': %d}  # right" % c + "".join(rng.choice(CLEAN) for _ in range(4)),
               "answers": ["right" if c % 3 else "left"], "scalars": [0.5], "rewards": [[0.5, 1.0]], "passed": [c % 2 == 0],
               "error": None}
        if c == 70:  # no text of its own; an object holding one
            row["meta"] = {"text": row.pop("text")}
        rows.append(row)
    path.write_text("".join(dumps(r) + "\n" for r in rows))
    ix = SampleIndex(path).refresh()
    raw = path.read_bytes()
    order = [(m.offset, m.offset + m.length) for m in ix.rows]
    quick = locate_many(raw, order, plain_lines(raw, order))
    assert sum(q is not None and q[ANSWERS] == LATER for q in quick) == 64 + 22  # runs 1 and 3 (rows 0-63, 128-149)
    assert quick[70] is None or quick[70][ANSWERS] != LATER
    for q in ["right", "return", "'k'", "answer:left", "text:{", "right is:passed", "error:x"]:
        assert _found(ix, q)[:2] == _brute(path, q), q
