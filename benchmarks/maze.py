"""Maze (synthetic, d = 4): collect gold or diamonds, avoid lava, reach the exit within a step budget.

The world (generator, simulator, reward) lives in :mod:`benchmarks.maze_env`, the exact route search in
:mod:`benchmarks.maze_search`; this module is the benchmark protocol: splits, prompts, parsing, scoring.

Splits
------
``train``: 1000 mazes, maze i has seed ``42 + i``; ``test``: 100 mazes, maze i has seed ``4242 + i``.
Ids are ``maze-<split>-<iiii>`` (``maze-test-0007`` is seed 4249). ``Problem.data`` is
:meth:`MazeInstance.to_data` (grid rows, positions, items, lava, bonus, budget, seed, attempt): enough to
rebuild and score without regenerating. ``load(path=...)`` ignores ``path`` (the task is synthetic).

Options
-------
``reward_mode``: ``"linear"`` (default) or ``"convex_bonus"`` (see :mod:`benchmarks.maze_env`); recorded
in ``describe()["options"]``. The prompt only shows and explains B in ``convex_bonus`` mode.

Answers and parsing
-------------------
A route is a list of moves. Accepted move tokens (case-insensitive): the words UP, DOWN, LEFT, RIGHT and
the letters U, D, L, R; any run of non-letters separates tokens (commas, spaces, arrows, digits...), and a
token written in capitals only from the letters U/D/L/R (``UURRD``) is read letter by letter. Every
other token is ignored (so "go UP then LEFT" is UP, LEFT). A single-answer completion is read from its
last closed ``<answer>`` tag, falling back to the whole text (closed ``<think>`` blocks removed; an
unclosed ``<think>`` drops the rest; after an unclosed ``<answer>`` only its content is kept). Chains use
``<route_1>..</route_1>`` .. ``<route_m>``; when no numbered tag was even opened, the text is split at
``---`` lines (only the parts that look like routes count:
at least one move and at least half of their words are moves), then repeated ``<answer>`` tags are
used. Missing answers are ``None`` (zero reward); unclosed (truncated) tags give ``None``.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from benchmarks.base import Benchmark, Messages, Option, Problem, parse_numbered_tags, user
from benchmarks.tags import find_tags, strip_blocks
from benchmarks.maze_env import (COMPONENTS, MOVES, REWARD_MODES, MazeInstance, generate_maze, is_move_token,
                                 parse_moves, reward_from_counts, simulate)

SPLIT_SEEDS = {"train": (42, 1000), "test": (4242, 100)}
STYLES = ("full", "compact")

_TOKEN_RE = re.compile(r"[A-Za-z]+")
_SEP_LINE_RE = re.compile(r"^[ \t]*-{3,}[ \t]*$", re.M)


def _move_fraction(text: str) -> tuple[int, float]:
    toks = _TOKEN_RE.findall(text)
    if not toks:
        return 0, 0.0
    good = sum(1 for t in toks if is_move_token(t))
    return good, good / len(toks)


def _strip_think(text: str) -> str:
    text = strip_blocks(text, "think")
    i = text.lower().find("<think>")
    return text[:i] if i >= 0 else text


def parse_single(completion: str) -> str | None:
    if not isinstance(completion, str):
        return None
    found = find_tags(completion, "answer")
    if found:
        return found[-1].strip()
    text = _strip_think(completion)
    i = text.lower().rfind("<answer>")
    if i >= 0:                      # truncated inside the answer: keep what was written of it
        text = text[i + len("<answer>"):]
    rest = text.strip()
    return rest or None


def parse_multi(completion: str, m: int, stem: str = "route") -> list[str | None]:
    if m <= 0:
        return []
    if not isinstance(completion, str):
        return [None] * m
    out = parse_numbered_tags(completion, stem, m)
    if any(a is not None for a in out) or re.search(rf"<{re.escape(stem)}_\d+>", completion, re.I):
        return out                  # the numbered format was used: unclosed (truncated) routes are None
    text = _strip_think(completion)
    if _SEP_LINE_RE.search(text):
        parts = [p.strip() for p in _SEP_LINE_RE.split(text)]
        routes = []
        for p in parts:
            # an <answer> inside a part is that part's route
            inner = find_tags(p, "answer")
            cand = inner[-1].strip() if inner else p
            good, frac = _move_fraction(cand)
            if good >= 1 and frac >= 0.5:
                routes.append(cand)
        if routes:
            return (routes + [None] * m)[:m]
    answers = [a.strip() for a in find_tags(completion, "answer")]
    if answers:
        return (answers + [None] * m)[:m]
    return [None] * m


def maze_problems(label: str, base_seed: int, n: int) -> list[Problem]:
    """Mazes base_seed .. base_seed+n-1 as Problems ``maze-<label>-<iiii>``; also used for held-out
    validation sets drawn from seeds that are neither train nor test."""
    return [Problem(id=f"maze-{label}-{i:04d}", data=generate_maze(base_seed + i).to_data(),
                    meta={"split": label, "index": i, "seed": base_seed + i}) for i in range(n)]


class Maze(Benchmark):
    name = "maze"
    component_names = COMPONENTS
    splits = {s: n for s, (_, n) in SPLIT_SEEDS.items()}
    answer_tag = "route"
    default_temperature = 0.7
    default_top_p = 1.0

    options_spec = {
        "reward_mode": Option("linear", "reward shaping of the route", tuple(REWARD_MODES)),
    }

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.reward_mode = self.options["reward_mode"]

    # ---- data -------------------------------------------------------------------------------------
    @staticmethod
    def seed_of(split: str, index: int) -> int:
        return SPLIT_SEEDS[split][0] + int(index)

    def load(self, split: str, *, path: str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the split (``path`` is ignored: the task is synthetic)."""
        if split not in SPLIT_SEEDS:
            raise KeyError(f"unknown maze split {split!r}; known: {', '.join(SPLIT_SEEDS)}")
        base, n = SPLIT_SEEDS[split]
        if limit is not None:
            n = max(0, min(n, int(limit)))
        return maze_problems(split, base, n)

    # ---- prompts ----------------------------------------------------------------------------------
    def _world_text(self, inst: MazeInstance, style: str) -> str:
        convex = self.reward_mode == "convex_bonus"
        grid = inst.render(show_bonus=convex)
        if style == "compact":
            return f"{grid}\nBudget: {inst.budget}"
        legend = ("Legend: S = start, E = exit, # = wall, . = floor, G = gold item, D = diamond item, "
                  "~ = lava" + (", B = bonus tile" if convex else "") + ".")
        n = inst.size
        lines = [
            f"You are in a {n}x{n} grid maze, shown below with the top row first (UP moves towards it).",
            "",
            grid,
            "",
            legend,
            f"Step budget: {inst.budget} moves.",
            "",
            "Rules:",
            "- Moves are UP, DOWN, LEFT, RIGHT. Every move uses one step of the budget; moving into a wall "
            "or off the grid uses the step and you stay where you are.",
            "- The episode ends when you reach E. Moves after E or beyond the budget are ignored.",
            "- Stepping on an item collects it (once). Lava can be crossed, but every lava tile you step on "
            "counts against you.",
            "",
            "Score (4 components, each between 0 and 1; all are 0 unless you reach E within the budget):",
            "- completion: 1 if you reach E.",
            f"- gold: fraction of the {len(inst.gold)} gold items (G) collected.",
            f"- diamond: fraction of the {len(inst.diamond)} diamond items (D) collected.",
            f"- avoid_lava: 1 - (lava tiles stepped on) / {len(inst.lava)}.",
        ]
        if convex:
            lines += [
                "- gold, diamond and avoid_lava are squared; if you step on the bonus tile B before "
                "reaching E they are multiplied by 1.5 (capped at 1).",
            ]
        lines += ["The budget is tight: you usually cannot have everything, so choose a trade-off."]
        return "\n".join(lines)

    def prompt(self, problem: Problem, *, style: str = "full") -> Messages:
        inst = MazeInstance.from_problem(problem)
        self._check_style(style)
        if style == "compact":
            return user(self._world_text(inst, style) + "\nAnswer: <answer>moves as U/D/L/R, comma-separated</answer>")
        return user(self._world_text(inst, style) + "\n\n"
                    "Think as needed, then give your route as a comma-separated list of moves inside "
                    "<answer></answer>, for example <answer>RIGHT, RIGHT, DOWN</answer>.")

    def multi_prompt(self, problem: Problem, m: int, *, style: str = "full") -> Messages:
        inst = MazeInstance.from_problem(problem)
        self._check_style(style)
        m = int(m)
        tags = " ".join(f"<route_{i}>...</route_{i}>" for i in range(1, m + 1))
        if style == "compact":
            return user(self._world_text(inst, style) + f"\nAnswer: {m} different routes as U/D/L/R, "
                        f"comma-separated: {tags}")
        return user(self._world_text(inst, style) + "\n\n"
                    f"Think as needed, then give {m} different routes, each a comma-separated list of moves "
                    f"in its own numbered tag: {tags}. Make the routes genuinely different (for example "
                    "different trade-offs between gold, diamonds and lava); for example "
                    "<route_1>RIGHT, RIGHT, DOWN</route_1>.")

    @staticmethod
    def _check_style(style: str) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown prompt style {style!r}; known: {', '.join(STYLES)}")

    # ---- parsing ----------------------------------------------------------------------------------
    def parse(self, completion: str, m: int | None = None) -> list[str | None]:
        if m is None:
            return [self.parse_single(completion)]
        return parse_multi(completion, int(m), self.answer_tag)

    def parse_single(self, completion: str) -> str | None:
        return parse_single(completion)

    # ---- scoring ----------------------------------------------------------------------------------
    def reward(self, problem: Problem, answer: str | None) -> np.ndarray:
        if answer is None:
            return np.zeros(self.d)
        r, _ = simulate(MazeInstance.from_problem(problem), parse_moves(answer), self.reward_mode)
        return r

    def simulate(self, problem: Problem, answer: str | Sequence[str] | None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reward and episode info for an answer string or a move list."""
        moves = parse_moves(answer) if isinstance(answer, str) or answer is None else list(answer)
        return simulate(MazeInstance.from_problem(problem), moves, self.reward_mode)

    def dedup_key(self, problem: Problem, answer: str | None, r: np.ndarray) -> Any:
        """Two answers of a chain are duplicates when they parse to the same move sequence (vpo.md)."""
        if answer is None:
            return None
        return tuple(parse_moves(answer))


def best_route(maze: Any, weights: Sequence[float], reward_mode: str = "linear") -> list[str]:
    """A route maximising ``weights . r`` within the budget (see :mod:`benchmarks.maze_search`)."""
    from benchmarks.maze_search import best_route as _best
    return _best(maze, weights, reward_mode)


__all__ = ["Maze", "MazeInstance", "generate_maze", "simulate", "parse_moves", "parse_single",
           "parse_multi", "best_route", "reward_from_counts", "MOVES", "COMPONENTS", "REWARD_MODES",
           "SPLIT_SEEDS"]
