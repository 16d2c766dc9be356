"""Per-chain completion-token counts for a request that sampled several choices (``n > 1``).

Why: an OpenAI-compatible server (vLLM's included) reports ``usage`` for the whole request only, so
with ``n > 1`` no row would have a completion-token count and the token-cost metrics (best at equal
tokens) would be empty. The rule, exact wherever the reply determines the answer:

1. A choice that ended at the budget (``finish_reason == "length"``) used exactly ``max_tokens``.
2. The server's total, less those, belongs to the other choices. With one other choice that is its
   count, exactly.
3. With several, the remainder is divided in proportion to their lengths counted by the model's
   tokenizer (by characters when no tokenizer is known locally), rounded by largest remainder so that
   the counts add up to the server's total. A reply whose numbers do not fit rule 1 (a choice cut by
   the context before the budget) is divided over all choices that way.
4. A server that reports no total: the tokenizer's counts, or no count without a tokenizer.

Each row says which rule gave its count (``extra.completion_tokens_from``: ``server``, ``exact``,
``split:tokenizer``, ``split:characters`` or ``tokenizer``); the server's total stays in
``extra.group_usage``.
"""
from __future__ import annotations

from typing import Sequence

FROM_SERVER, EXACT, TOKENIZER = "server", "exact", "tokenizer"


def apportion(total: int, weights: Sequence[int]) -> list[int]:
    """``total`` split into integers proportional to ``weights`` that add up to ``total`` (largest
    remainder; equal shares when every weight is 0; ties go to the earlier choice)."""
    n = len(weights)
    if n == 0:
        return []
    w = [max(0, int(x)) for x in weights]
    if sum(w) == 0:
        w = [1] * n
    whole = sum(w)
    shares = [total * x // whole for x in w]
    left = total - sum(shares)
    order = sorted(range(n), key=lambda i: (-(total * w[i] % whole), i))
    for i in order[:left]:
        shares[i] += 1
    return shares


def split_completion_tokens(total: int | None, finishes: Sequence[str | None], max_tokens: int,
                            tokenizer_counts: Sequence[int] | None,
                            char_counts: Sequence[int]) -> tuple[list[int | None], str]:
    """(count per choice, which rule) for one reply's choices; see the module docstring."""
    n = len(finishes)
    if total is None or total < 0:
        if tokenizer_counts is None:
            return [None] * n, "none"
        return list(tokenizer_counts), TOKENIZER
    weights, how = (tokenizer_counts, "split:tokenizer") if tokenizer_counts is not None \
        else (char_counts, "split:characters")
    at_budget = [i for i, f in enumerate(finishes) if f == "length"]
    others = [i for i in range(n) if i not in at_budget]
    rest = total - max_tokens * len(at_budget)
    if rest < 0 or (not others and rest != 0) or (others and rest < len(others)):
        return apportion(total, weights), how  # the reply does not fit rule 1: divide the whole total
    out: list[int | None] = [max_tokens if i in at_budget else 0 for i in range(n)]
    if len(others) <= 1:
        for i in others:
            out[i] = rest
        return out, EXACT
    for i, share in zip(others, apportion(rest, [weights[i] for i in others])):
        out[i] = share
    return out, how
