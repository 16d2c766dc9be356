"""Selection without an oracle: which one of k candidates would a deployment return?

best@k assumes a grader picks the best of k. A deployment has only what the model wrote (and, for
code, the visible tests). Each strategy here picks one candidate from a k-subset using only that,
and ``selected@k[strategy]`` is the expected *graded* score of the pick over all k-subsets of the
pool, which makes it directly comparable with best@k (= ``selected@k[oracle]``).

    oracle        the best graded scalar (= best@k)                               exact
    random        a uniformly random candidate (= the pool mean, for every k)     exact
    majority      the most frequent normalised answer; ties uniformly at random   seeded Monte Carlo
    public-tests  the highest share of visible tests, scored on the hidden tests  exact

Ties are always broken uniformly at random. Both exact strategies are "pick the maximum of a ranking
key, score something else": with candidates sorted by key, the probability that sorted position i is
the maximum of a k-subset is C(i-1,k-1)/C(n,k) (the best@k weights), and within a tier of equal keys
the pick is uniform, so a tier contributes its total weight times its mean score. majority depends on
the counts inside the subset, so it is estimated by sampling subsets; its value per draw is the mean
pool score of the winning answer group (the conditional expectation of a uniform pick inside the
group), which lowers the variance without bias.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Sequence

import numpy as np

from vpo_harness.harness.core.metrics import best_at_k_weights
from vpo_harness.harness.core.suggest import unknown

#: draws per problem and k for the Monte Carlo strategies
MC_DRAWS = 2000


@dataclass(frozen=True)
class Pool:
    """One problem's candidates: what the grader knows (scores) and what a deployment knows (keys,
    visible-test shares). ``keys[i] is None`` means candidate i has no parsable answer: it never wins
    a vote while some parsed answer is in the subset."""

    scores: np.ndarray  # (n,) graded task scalar
    keys: Sequence[Hashable | None] | None = None  # normalised answers (majority)
    visible: np.ndarray | None = None  # (n,) share of visible tests passed (public-tests)
    hidden: np.ndarray | None = None  # (n,) share of hidden tests passed (public-tests score)

    @property
    def n(self) -> int:
        return int(np.asarray(self.scores).size)


def _tiered_pick(key: np.ndarray, score: np.ndarray, k: int) -> float:
    """Expected score of the max-key candidate of a uniform k-subset, ties uniform (exact)."""
    n = key.size
    order = np.argsort(key, kind="stable")
    ks, ss = key[order], score[order]
    w = best_at_k_weights(n, k)  # P(sorted position i is the subset's top position)
    # tiers of equal key: a tie is broken uniformly, so a tier counts as its weight x its mean score
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    tier_w = np.add.reduceat(w, starts)
    tier_mean = np.add.reduceat(ss, starts) / np.diff(np.r_[starts, n])
    return float(tier_w @ tier_mean)


def _oracle(pool: Pool, k: int, rng: np.random.Generator) -> tuple[float, float]:
    s = np.asarray(pool.scores, dtype=float)
    return float(np.sort(s) @ best_at_k_weights(s.size, k)), 0.0


def _random(pool: Pool, k: int, rng: np.random.Generator) -> tuple[float, float]:
    return float(np.mean(pool.scores)), 0.0


def _public_tests(pool: Pool, k: int, rng: np.random.Generator) -> tuple[float, float]:
    if pool.visible is None or pool.hidden is None:
        return float("nan"), 0.0
    vis, hid = np.asarray(pool.visible, dtype=float), np.asarray(pool.hidden, dtype=float)
    if np.isnan(hid).any() or np.isnan(vis).any():
        return float("nan"), 0.0
    return _tiered_pick(np.round(vis, 12), hid, k), 0.0


def group_labels(keys: Sequence[Hashable | None]) -> tuple[np.ndarray, int, int]:
    """Integer label per candidate, the number of groups, and the label of the None group (-1: none)."""
    ids: dict[Hashable, int] = {}
    labels = np.empty(len(keys), dtype=np.int64)
    none_label = -1
    for i, key in enumerate(keys):
        if key is None:
            if none_label < 0:
                none_label = len(ids)
                ids[("\0none",)] = none_label
            labels[i] = none_label
        else:
            labels[i] = ids.setdefault(key, len(ids))
    return labels, len(ids), none_label


def _majority(pool: Pool, k: int, rng: np.random.Generator, draws: int = MC_DRAWS) -> tuple[float, float]:
    if pool.keys is None:
        return float("nan"), 0.0
    s = np.asarray(pool.scores, dtype=float)
    n = s.size
    labels, g, none_label = group_labels(pool.keys)
    group_mean = np.bincount(labels, weights=s, minlength=g) / np.bincount(labels, minlength=g)
    if k == 1 or g == 1:  # one vote, or one group: a uniform pick, exactly the pool mean
        return float(s.mean()), 0.0
    if k == n:  # the whole pool: only the tie-break is random, so it is exact as well
        counts = np.bincount(labels, minlength=g).astype(float)
        if none_label >= 0:
            counts[none_label] = 0.5 if counts.sum() == counts[none_label] else 0.0
        top = counts == counts.max()
        return float(group_mean[top].mean()), 0.0
    subsets = np.argpartition(rng.random((draws, n)), k - 1, axis=1)[:, :k]  # uniform k-subsets
    lab = labels[subsets]  # (draws, k)
    counts = np.bincount((lab + g * np.arange(draws)[:, None]).ravel(), minlength=draws * g)
    counts = counts.reshape(draws, g).astype(float)  # (draws, g) votes per answer group
    eff = np.where(counts > 0, counts, -np.inf)
    if none_label >= 0:  # unparsable answers only win when nothing parsed was drawn
        eff[:, none_label] = np.where(counts[:, none_label] > 0, 0.5, -np.inf)
    eff += rng.random(eff.shape) * 0.25  # uniform tie-break among equal counts (< the 0.5 gap)
    vals = group_mean[eff.argmax(axis=1)]
    if vals.max() - vals.min() < 1e-12:  # the pick's score never varied: the value is exact
        return float(vals.mean()), 0.0
    return float(vals.mean()), float(vals.std(ddof=1) / np.sqrt(draws))


@dataclass(frozen=True)
class Strategy:
    name: str
    exact: bool
    needs: str  # what a pool must carry: "scores" | "keys" | "visible"
    fn: Callable[[Pool, int, np.random.Generator], tuple[float, float]]
    doc: str


STRATEGIES: dict[str, Strategy] = {}


def register(strategy: Strategy) -> Strategy:
    STRATEGIES[strategy.name] = strategy
    return strategy


register(Strategy("oracle", True, "scores", _oracle, "the best graded candidate (= best@k)"))
register(Strategy("random", True, "scores", _random, "a uniformly random candidate (= the mean score)"))
register(Strategy("majority", False, "keys", _majority, "the most frequent normalised answer"))
register(Strategy("public-tests", True, "visible", _public_tests,
                  "highest share of visible tests passed, scored on the hidden tests"))


def get_strategy(name: str) -> Strategy:
    if name not in STRATEGIES:
        raise ValueError(unknown("selection strategy", name, STRATEGIES))
    return STRATEGIES[name]


def selected_at_k(pools: Sequence[Pool], k: int, strategy: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Per-problem expected score of the strategy's pick from a uniform k-subset, and the Monte
    Carlo standard error of each value (0 where exact). NaN where k > n or the pool lacks what the
    strategy needs. Each problem has its own seeded stream, so a value does not depend on the others."""
    strat = get_strategy(strategy)
    vals = np.full(len(pools), np.nan)
    errs = np.zeros(len(pools))
    for p, pool in enumerate(pools):
        if not 1 <= k <= pool.n:
            continue
        rng = np.random.default_rng([seed, k, p])
        vals[p], errs[p] = strat.fn(pool, k, rng)
    return vals, errs


def summarize_selected(values: np.ndarray, mc_err: np.ndarray) -> dict[str, float | int]:
    """Mean over problems with the sampling standard error and, separately, the Monte Carlo one."""
    from vpo_harness.harness.core.metrics import mean_se

    est = mean_se(values).as_dict()
    ok = ~np.isnan(values)
    est["mc_stderr"] = float(np.sqrt((mc_err[ok] ** 2).sum()) / max(ok.sum(), 1))
    return est


def applicable(strategy: str, pools: Sequence[Pool]) -> bool:
    """Whether the run carries what the strategy needs (answer keys, a visible/hidden test split)."""
    need = get_strategy(strategy).needs
    if need == "keys":
        return any(p.keys is not None for p in pools)
    if need == "visible":
        return any(p.visible is not None for p in pools)
    return True


# ---------------------------------------------------------------------------------------------------
# normalised answers per task (what majority voting counts)
def _maze_key(answer: str) -> Hashable | None:
    from vpo_harness.benchmarks.maze_env import parse_moves

    moves = parse_moves(answer)
    return tuple(moves) if moves else None


def _musique_key(answer: str) -> Hashable | None:
    from vpo_harness.benchmarks.base import extract_tag
    from vpo_harness.benchmarks.textnorm import squad_normalize, strip_think

    pred = extract_tag(strip_think(answer), "answer")
    norm = squad_normalize(pred) if pred is not None else ""
    return norm or None


def _eureqa_key(answer: str) -> Hashable | None:
    from vpo_harness.benchmarks.eureqa import parse_entities
    from vpo_harness.benchmarks.textnorm import entity_normalize

    ents = parse_entities(answer)
    if all(e is None for e in ents):
        return None
    return tuple(entity_normalize(e) if e is not None else None for e in ents)


def _toolrl_key(answer: str) -> Hashable | None:
    """Canonical tool calls: case/space-folded names, parameters as sorted JSON, call order kept."""
    from vpo_harness.benchmarks.toolrl import parse_calls

    calls, nonempty = parse_calls(answer)
    canon = tuple((" ".join(c["name"].casefold().split()),
                   json.dumps(c["parameters"], sort_keys=True, ensure_ascii=False, default=str)) for c in calls)
    if not canon and nonempty:  # a tool-call block nothing could be read from
        return None
    return ("calls",) + canon


def _lcb_key(answer: str) -> Hashable | None:
    from vpo_harness.benchmarks.livecodebench import normalized_ast

    return normalized_ast(answer)


ANSWER_KEYS: dict[str, Callable[[str], Hashable | None]] = {
    "maze": _maze_key, "musique": _musique_key, "eureqa": _eureqa_key, "toolrl": _toolrl_key,
    "livecodebench": _lcb_key,
}


def answer_key(task: str, answer: Any) -> Hashable | None:
    """The normalised form of a stored answer under which majority voting counts it (None: no answer)."""
    if not isinstance(answer, str) or not answer.strip():
        return None
    fn = ANSWER_KEYS.get(task)
    if fn is None:
        return " ".join(answer.split())
    try:
        return fn(answer)
    except Exception:  # a normaliser must not sink a report; an unreadable answer simply has no vote
        return None


# ---------------------------------------------------------------------------------------------------
# visible / hidden tests (public-tests)
def visible_mask(n_tests: int, mode: str | None, public: Sequence[bool] | None = None) -> np.ndarray | None:
    """Which of a problem's tests a deployment may run. ``public``: the tests the problem statement
    publishes (``public`` flags of the kept tests; hidden = private); ``half``: the even-indexed half
    (tests are stored smallest first, so both halves span the size range); None: no split, strategy
    unavailable. A problem without a hidden (or without a visible) test gets None too."""
    if mode in (None, "", "none") or n_tests < 2:
        return None
    if mode == "half":
        return np.arange(n_tests) % 2 == 0
    if mode == "public":
        if public is None or len(public) != n_tests:
            return None
        mask = np.asarray(public, dtype=bool)
        return mask if 0 < mask.sum() < n_tests else None
    raise ValueError(f"unknown visible_tests mode {mode!r}; known: half, public")


def split_visible(rewards: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(share of visible tests passed, share of hidden tests passed) per candidate."""
    if mask is None or rewards.ndim != 2 or rewards.shape[1] != mask.size:
        return None, None
    return rewards[:, mask].mean(axis=1), rewards[:, ~mask].mean(axis=1)


__all__ = ["Pool", "Strategy", "STRATEGIES", "register", "get_strategy", "selected_at_k", "summarize_selected",
           "applicable", "answer_key", "visible_mask", "split_visible", "group_labels", "MC_DRAWS"]
