"""Where a stored row's searchable fields lie in its line, found without parsing the row, and a
substring test on those bytes that gives the same answer as the case-folded text.

Parsing every row is what makes a search cost more than a read of the file (its numbers dominate
``json.loads``), so :func:`locate` walks only the four fields a search reads: ``text``, ``error``,
``answers`` (one string per candidate) and ``details`` (one value per candidate). It answers ``None``
(parse this row) unless it can prove its spans; the proof, for a line the index already read as one
valid JSON object:

1. ``"text"`` followed by whitespace and ``:`` is a key unless a backslash precedes its quote: an
   unescaped quote opens or closes a string, and after a closing quote no letter may follow, so a
   quote after an even run of backslashes (the end of a string holding ``\\``) cannot be followed
   by ``text``. Inside a string every quote is escaped, so no key is found there.
2. Braces: every object other than the row itself lies inside a ``details`` value or is counted.
   With exactly one ``{`` outside the string spans found and the ``details`` elements, the row is
   the only object there, so a key found outside the ``details`` elements is one of its own keys.
   A key found twice (a duplicate key: JSON keeps the last) is not proven: that row is parsed.
3. Case: the row has no ``\\u`` escape (such a row, e.g. text with a lone surrogate, is parsed) and
   casefolding its text turns no non-ASCII character into ASCII (``ß`` -> ``ss``, ``K`` (Kelvin) ->
   ``k``). Then an ASCII term is in the case-folded text exactly when its JSON encoding, lower-cased,
   is in the lower-cased bytes at a character boundary (:func:`afind`): ASCII casefolds as
   ``bytes.lower`` does, every other character is escaped or UTF-8 bytes >= 0x80 that no ASCII term
   byte equals, and without ``\\u`` every escape is two bytes (``\\n``, ``\\"``...), so a match is on a
   boundary unless an odd run of backslashes precedes it.

:func:`locate_many` proves a run of adjacent lines at once with a few counts over the run (the
first search of a large run locates every row it reads), and :func:`fill_later` the fields it left.
A term with non-ASCII letters is checked on the parsed row.
"""
from __future__ import annotations

import bisect
import json
import json.decoder
import json.scanner
import re
from array import array

_scan_string = json.decoder.scanstring  # C: (decoded, index after the closing quote)
_scan_value = json.scanner.make_scanner(json.JSONDecoder())  # C: (value, end) of a value at an index
_W = r"[ \t\n\r]*"
_STR = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_SEP = re.compile(rf"{_W}(,|\]){_W}")
_WS = re.compile(_W)
_BACKSLASH = 0x5C
_QUOTE = 0x22


def plain(line: bytes) -> bool:
    """Whether bytes can answer an ASCII term for this line (point 3 of the module docstring)."""
    if b"\\u" in line:
        return False
    if line.isascii():
        return True
    s = line.decode("utf-8")
    return len(s.casefold().encode("ascii", "ignore")) == len(s.encode("ascii", "ignore"))


def _starts(s: str, key: str) -> list[int]:
    """Where the value of each ``"key":`` in ``s`` starts, skipping an occurrence whose quote
    follows a backslash (point 1 of the module docstring)."""
    pat = f'"{key}"'
    out = []
    p = s.find(pat)
    while p >= 0:
        q = p + len(pat)
        if s[p - 1] != "\\":
            e = q if s.startswith(":", q) else _WS.match(s, q).end()
            if s.startswith(":", e):
                out.append(e + 2 if s.startswith(' "', e + 1) else _WS.match(s, e + 1).end())
        p = s.find(pat, q)
    return out


#: where each field sits in the array :func:`locate` answers
TEXT, ERROR, ANSWERS, DETAILS = 0, 2, 4, 6


def locate(line: bytes) -> array | None:
    """Where ``line``'s searchable fields are: ``[text a, b, error a, b, answers a, b, details a, b]``,
    a string's content (quotes excluded) for text and error, the whole list for answers and details;
    ``-1, -1`` where a field is missing or of another type, and an answers end of ``-1`` where it is
    found when first needed (:func:`answer_spans`). None when the row has to be parsed (the module
    docstring says when)."""
    if not plain(line):
        return None
    s = line.decode("latin-1")  # one character per byte: indices are byte offsets
    out = array("i", (-1, -1, -1, -1, -1, -1, -1, -1))
    braces = s.count("{")
    a = b = -1
    try:
        det = _starts(s, "details")
        if len(det) > 1:
            return None
        if det and s.startswith("[", det[0]):
            a, b = out[DETAILS], out[DETAILS + 1] = det[0], _scan_value(s, det[0])[1]
        for key, i in (("text", TEXT), ("error", ERROR), ("answers", ANSWERS)):
            at = [p for p in _starts(s, key) if not a <= p < b]  # those inside details are not the row's
            if len(at) > 1:
                return None  # a duplicate key: the last one counts, so parse
            if not at:
                continue
            at = at[0]
            if i == ANSWERS:
                if s.startswith("[", at):
                    out[i] = at
                    if braces > 1:  # its braces are inside strings only if it holds strings only
                        value, out[i + 1] = _scan_value(s, at)
                        if not all(type(x) is str for x in value):
                            return None
            elif s.startswith('"', at):
                out[i], out[i + 1] = at + 1, _scan_string(s, at + 1)[1] - 1
    except (ValueError, StopIteration):  # a shape this walk does not follow: parse the row
        return None
    if braces > 1:
        braces -= sum(s.count("{", out[i], out[i + 1]) for i in (TEXT, ERROR, ANSWERS, DETAILS) if out[i] >= 0)
    return out if braces == 1 else None


def plain_lines(raw: bytes, bounds: list[tuple[int, int]]) -> list[bool]:
    """:func:`plain` of each line ``raw[a:b]``, with a few scans of ``raw`` instead of per line."""
    out = [True] * len(bounds)
    starts = [a for a, _ in bounds]
    p = raw.find(b"\\u")
    while p >= 0:
        i = bisect.bisect_right(starts, p) - 1
        if i >= 0 and p < bounds[i][1]:
            out[i] = False
        p = raw.find(b"\\u", p + 1)
    if not raw.isascii():
        for i, (a, b) in enumerate(bounds):
            if out[i] and not raw[a:b].isascii():
                out[i] = plain(raw[a:b])
    return out


#: rows proven together: a run that fails a check is located row by row
_RUN = 64


def locate_many(raw: bytes, bounds: list[tuple[int, int]], plains: list[bool]) -> list[array | None]:
    """For each line ``raw[a:b]`` (``plains`` from :func:`plain_lines`): :func:`locate`'s array, or
    for runs of adjacent lines written as ``vpo_harness.harness.core.store.dumps`` writes them only the text's
    span, the other fields marked :data:`LATER` (:func:`locate` the line when one is needed). For
    such a run one count over it of ``{`` (less those inside the texts found, which are strings) and
    of ``"text"`` proves what :func:`locate` proves per line: each line has one ``{`` outside its
    text (no object but the row) and no ``"text"`` token but the key found, so a line costs one
    ``find`` and a scan of its text."""
    out: list[array | None] = [None] * len(bounds)
    i = 0
    while i < len(bounds):
        j = i + 1
        while j < len(bounds) and j - i < _RUN and bounds[j][0] == bounds[j - 1][1]:
            j += 1
        a, b = bounds[i][0], bounds[j - 1][1]
        quick = None
        braces = raw.count(b"{", a, b) if all(plains[i:j]) else -1
        if braces >= j - i:
            quick = [_quick(raw, *bounds[k]) for k in range(i, j)]
            if None in quick or raw.count(b'"text"', a, b) != sum(q[TEXT] != -1 for q in quick):
                quick = None
            elif braces > j - i:  # those inside a text (code) are no objects
                braces -= sum(raw.count(b"{", x + q[TEXT], x + q[TEXT + 1])
                              for q, (x, _) in zip(quick, bounds[i:j]) if q[TEXT] >= 0)
                if braces != j - i:
                    quick = None
        for k in range(i, j):
            out[k] = quick[k - i] if quick is not None else (locate(raw[bounds[k][0]:bounds[k][1]]) if plains[k] else None)
        i = j
    return out


#: a field :func:`locate_many` left for :func:`locate`
LATER = -2
_LATER8 = (-3, -3, LATER, LATER, LATER, LATER, LATER, LATER)


def _quick(raw: bytes, a: int, b: int) -> array | None:
    """The text's span in the line ``raw[a:b]`` (relative to ``a``) where its key has ``dumps``'
    ``": "`` separator (-3: found, not a string; -1: no text key), the rest :data:`LATER`; None
    when the key does not look so."""
    out = array("i", _LATER8)
    t = raw.find(b'"text": ', a, b)
    if t < 0:
        out[0] = out[1] = -1
    elif raw[t - 1] == _BACKSLASH:
        return None
    elif raw[t + 8] == _QUOTE:
        q = raw.find(b'"', t + 9)  # the closing quote, unless a backslash precedes it
        out[0], out[1] = t + 9 - a, (q if raw[q - 1] != _BACKSLASH else _string_end(raw, t + 9)) - a
    return out


def _string_end(raw: bytes, i: int) -> int:
    """The closing quote of the string whose content starts at ``i``: a quote after an even run
    of backslashes."""
    while True:
        q = raw.find(b'"', i)
        k = q
        while raw[k - 1] == _BACKSLASH:
            k -= 1
        if not (q - k) % 2:
            return q
        i = q + 1


_LATER_KEYS = {ERROR: b"error", ANSWERS: b"answers", DETAILS: b"details"}


def fill_later(raw: bytes, a: int, b: int, sp: array, i: int) -> bool:
    """Locate field ``i`` (:data:`ERROR`, :data:`ANSWERS` or :data:`DETAILS`) that
    :func:`locate_many` left for later in the line ``raw[a:b]``, into ``sp``; False when it takes
    :func:`locate`. The run check proved the line has one ``{`` outside its text, so no object but
    the row, and a key found once is the row's."""
    key = _LATER_KEYS[i]
    n = raw.count(b'"' + key + b'"', a, b)
    if n == 0:
        sp[i] = sp[i + 1] = -1
        return True
    if n > 1 or i == DETAILS:
        return False
    p = raw.find(b'"' + key + b'": ', a, b)
    if p < 0 or raw[p - 1] == _BACKSLASH:
        return False
    v = p + len(key) + 4
    sp[i] = sp[i + 1] = -1
    if i == ANSWERS and raw[v] == 0x5B:  # [
        sp[i] = v - a
    elif i == ERROR and raw[v] == _QUOTE:
        sp[i], sp[i + 1] = v + 1 - a, _string_end(raw, v + 1) - a
    return True


_STRING_B = re.compile(_STR.encode())


_STRINGS_B = re.compile(rf"\[{_W}(?:{_STR}{_W}(?:,{_W}{_STR}{_W})*)?\]".encode())  # a list of strings only


def answer_spans(buf: bytes, a: int, b: int) -> list[tuple[int, int]] | None:
    """The content spans of the answers list at ``buf[a:b]`` (``b`` -1: not yet known), one per
    answer; None when an answer is not a string (then the row is parsed)."""
    if b < 0:
        m = _STRINGS_B.match(buf, a)
        if m is None:
            return None
        b = m.end()
    return [(m.start() + 1, m.end() - 1) for m in _STRING_B.finditer(buf, a, b)]


def values_in(buf: bytes, a: int, b: int) -> list[tuple[int, int]]:
    """The spans of the elements of the JSON list at ``buf[a:b]``, one per element."""
    s = buf[a:b].decode("latin-1")
    out: list[tuple[int, int]] = []
    i = _WS.match(s, 1).end()
    if s.startswith("]", i):
        return out
    while True:
        end = _scan_value(s, i)[1]
        out.append((a + i, a + end))
        m = _SEP.match(s, end)
        if m is None:
            raise ValueError("not a list")
        if m.group(1) == "]":
            return out
        i = m.end()


def needle(term: str) -> bytes | None:
    """The bytes an ASCII (case-folded) term has in a stored line, lower-cased; None for a term
    with non-ASCII characters, which bytes cannot answer (point 3)."""
    enc = json.dumps(term, ensure_ascii=False)[1:-1]
    return enc.encode("ascii") if enc.isascii() and enc else None


def afind(low: bytes, nd: bytes, a: int, b: int) -> bool:
    """Whether ``nd`` occurs in ``low[a:b]`` (the lower-cased content of one string of a plain
    line) at a character boundary: not as the tail of a two-byte escape."""
    p = low.find(nd, a, b)
    while p > a and low[p - 1] == _BACKSLASH:
        k = p - 1
        while k > a and low[k - 1] == _BACKSLASH:
            k -= 1
        if not (p - k) % 2:
            return True
        p = low.find(nd, p + 1, b)
    return p >= 0
