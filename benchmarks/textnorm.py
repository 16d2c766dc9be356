"""Text normalisation and overlap metrics shared by the QA-style tasks (MuSiQue, EUREQA, ToolRL).

One implementation of the SQuAD pipeline (lowercase, drop punctuation, drop articles, collapse spaces)
so that MuSiQue's answer F1, EUREQA's entity match and ToolRL's free-text argument match cannot drift
apart. Task differences are separate small functions, not flags buried in one.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any, Hashable, Iterable

from vpo_harness.benchmarks.tags import strip_blocks

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def squad_normalize(text: Any) -> str:
    """SQuAD's ``normalize_answer``: lower, remove punctuation, remove articles, collapse whitespace.

    The order matters (punctuation before articles, as in the official script): "the-end" -> "theend".
    """
    if text is None:
        return ""
    s = str(text).lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def authors_normalize(text: Any, *, strip_articles: bool) -> str:
    """The VPO authors' ``normalize_text`` (``vpo/utils/text_metrics.py``): lower, then articles (when
    asked), *then* punctuation, collapse whitespace. The order differs from SQuAD's: "the-end" -> "end".
    MuSiQue answers strip articles; ToolRL argument values do not."""
    if text is None:
        return ""
    s = str(text).lower()
    if strip_articles:
        s = _ARTICLES.sub(" ", s)
    s = "".join(ch for ch in s if ch not in _PUNCT)
    return " ".join(s.split())


def authors_token_f1(pred: Any, gold: Any, *, strip_articles: bool) -> float:
    """Token F1 after :func:`authors_normalize` (1.0 when both sides have no tokens)."""
    return multiset_f1(authors_normalize(pred, strip_articles=strip_articles).split(),
                       authors_normalize(gold, strip_articles=strip_articles).split())


def entity_normalize(text: Any) -> str:
    """EUREQA entity names: ``_`` -> space first (Wikipedia titles), then the SQuAD steps.

    Underscores must become spaces before punctuation is dropped, else "Robert_Rodriguez" would collapse
    into one token "robertrodriguez" and no longer equal "Robert Rodriguez".
    """
    if text is None:
        return ""
    return squad_normalize(str(text).replace("_", " "))


def authors_entity_normalize(text: Any) -> str:
    """The VPO authors' EUREQA ``normalize_entity``: ``_`` -> space, then :func:`authors_normalize` with
    articles dropped *before* punctuation, so a hyphen-joined article goes: "The-London" -> "london"
    (SQuAD's order, :func:`entity_normalize`, gives "thelondon")."""
    if text is None:
        return ""
    return authors_normalize(str(text).replace("_", " "), strip_articles=True)


def multiset_f1(pred: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    """F1 of two multisets; 1.0 when both are empty (nothing asked, nothing given), 0.0 when one is."""
    pc, gc = Counter(pred), Counter(gold)
    if not pc and not gc:
        return 1.0
    if not pc or not gc:
        return 0.0
    overlap = sum((pc & gc).values())
    if overlap == 0:
        return 0.0
    p = overlap / sum(pc.values())
    r = overlap / sum(gc.values())
    return 2 * p * r / (p + r)


def set_f1(pred: Iterable[Hashable], gold: Iterable[Hashable]) -> float:
    """F1 of two sets (duplicates ignored); same empty-set conventions as :func:`multiset_f1`."""
    return multiset_f1(set(pred), set(gold))


def token_f1(pred: Any, gold: Any) -> float:
    """SQuAD token F1 after :func:`squad_normalize`.

    When either side normalises to no tokens the score is 1 iff both do (SQuAD v2's convention), so an
    answer like "the" never earns partial credit against a real answer.
    """
    return multiset_f1(squad_normalize(pred).split(), squad_normalize(gold).split())


def best_token_f1(pred: Any, golds: Iterable[Any]) -> float:
    """Max token F1 over the gold answer and its aliases."""
    return max((token_f1(pred, g) for g in golds), default=0.0)


def strip_think(text: str) -> str:
    """Drop closed ``<think>..</think>`` blocks: tags drafted while reasoning are not the answer."""
    return strip_blocks(text, "think")
