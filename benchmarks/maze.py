"""Maze (synthetic, d = 4): collect gold or diamonds, avoid lava, reach the exit within a step budget.

The world (the paper's generator, simulator, reward) lives in :mod:`vpo_harness.benchmarks.maze_env`, the exact
route search in :mod:`vpo_harness.benchmarks.maze_search`; this module is the benchmark protocol: splits, prompts,
parsing, scoring. Defaults follow the VPO authors' released code (``ryanboldi/vpo@767db79``,
``vpo_tasks/maze.py``), which produced the paper's numbers; ``shared/data/maze/authors_*.jsonl`` pin it.

Splits
------
``train``: 1000 mazes from base seed 42; ``test``: 100 from base seed 4242 (the paper's); ``val``: 100
from base seed 777000 (ours, used by neither: for choosing training steps). Index i of a split is the
i-th generator seed, counting up from the base, that the generator accepts. Ids are
``maze-<split>-<iiii>``; with ``base_seed=...`` the label is ``s<base_seed>``. ``Problem.data`` is
:meth:`MazeInstance.to_data`. ``load(path=...)`` ignores ``path`` (the task is synthetic).

Options (``--task-args``, all recorded in ``describe()["options"]``)
--------------------------------------------------------------------
``reward_mode``: ``convex_bonus`` (default: the mode every instance of the authors' data carries) or
``linear``. ``base_seed`` / ``n``: any split (``base_seed=777000,n=50``), overriding the named split's.
``parse``: ``paper`` (default) or ``lenient``.

Parsing (``parse=paper``, the authors' scorer)
----------------------------------------------
A route is the words UP/DOWN/LEFT/RIGHT (any case, whole words) of its text, in order; nothing else
counts (letters ``RRDD`` and ``DOWN_LEFT`` give no moves). Single answer: the *first* closed
``<answer>`` tag, else the whole completion (reasoning included: drafts inside ``<think>`` count, and
prose without tags is a route). Chains: the first closed ``<route_i>`` of each i; when no numbered tag
closed at all, the text split at ``---`` (when that gives >= 2 non-empty parts), else >= 2 ``<answer>``
tags, else the whole completion is route 1. An answer without any move is ``None`` (zero reward).

``parse=lenient`` (this project's earlier reading, benchmarks.md's wording): U/D/L/R letters and
capital runs (``RRDD``) count too, the *last* closed ``<answer>`` wins, closed ``<think>`` blocks are
dropped, ``---`` splits only count on their own line and only for parts that look like routes.

Prompts
-------
``style="full"`` is the authors' prompt character for character (single and multi-answer; for m != 3
the tag list names m tags where the authors' template always lists three). In ``linear`` mode the line
saying that B multiplies the other scores is replaced by one saying B has no effect. ``style="compact"``
(grid, budget, answer format) is for the bundled tiny models.
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from vpo_harness.benchmarks.base import Benchmark, Messages, Option, Problem, Shown, parse_numbered_tags, user
from vpo_harness.benchmarks.tags import find_tags, first_block, numbered_blocks, strip_blocks
from vpo_harness.benchmarks.maze_env import (COMPONENTS, MOVES, REWARD_MODES, MazeInstance, generate_maze, is_move_token,
                                 maze_split, parse_moves, reward_from_counts, simulate)

#: named splits: (base seed, size)
SPLIT_SEEDS = {"train": (42, 1000), "test": (4242, 100), "val": (777000, 100)}
STYLES = ("full", "compact")
PARSE_MODES = ("paper", "lenient")

_TOKEN_RE = re.compile(r"[A-Za-z]+")
_SEP_LINE_RE = re.compile(r"^[ \t]*-{3,}[ \t]*$", re.M)
_MOVE_WORD_RE = re.compile(r"\b(UP|DOWN|LEFT|RIGHT)\b")


# ---- the paper's reading (default) ---------------------------------------------------------------------
def paper_moves(text: Any) -> list[str]:
    """Moves of a text as the authors read them: the whole words UP/DOWN/LEFT/RIGHT after upper-casing
    (so ``right`` counts, ``R`` and ``DOWN_LEFT`` do not); the first closed ``<answer>`` when present."""
    if not isinstance(text, str):
        return []
    found = first_block(text, "answer")
    return _MOVE_WORD_RE.findall((found if found is not None else text).upper())


def _route(moves: Sequence[str]) -> str | None:
    return " ".join(moves) if moves else None


def paper_parse_single(completion: str) -> str | None:
    """Route of a single-answer completion (first ``<answer>`` tag, else the whole text), as
    space-separated move words; None when it holds no move."""
    return _route(paper_moves(completion))


def paper_parse_multi(completion: str, m: int, stem: str = "route") -> list[str | None]:
    """The authors' multi-route reading: numbered tags (first match each), else ``---`` parts, else
    repeated ``<answer>`` tags, else the whole text as route 1."""
    if m <= 0:
        return []
    if not isinstance(completion, str):
        return [None] * m
    tagged = numbered_blocks(completion, stem, m, which="first")
    if any(t is not None for t in tagged):
        parts: list[str | None] = tagged
    else:
        split = [p.strip() for p in completion.split("---") if p.strip()]
        answers = find_tags(completion, "answer")
        parts = split if len(split) >= 2 else answers if len(answers) >= 2 else [completion]
    parts = (list(parts) + [None] * m)[:m]
    return [_route(paper_moves(p)) if p is not None else None for p in parts]


# ---- the lenient reading (option parse=lenient) ------------------------------------------------------------
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
    """Lenient: last closed ``<answer>``, else the text without reasoning (raw answer text)."""
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
    """Lenient chain reading (raw answer texts)."""
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
    """The first n accepted mazes from ``base_seed`` as Problems ``maze-<label>-<iiii>``; also used for
    held-out validation sets drawn from a base seed that is neither train nor test."""
    return [Problem(id=f"maze-{label}-{i:04d}", data=inst.to_data(),
                    meta={"split": label, "index": i, "seed": inst.seed})
            for i, inst in enumerate(maze_split(base_seed, n))]


class Maze(Benchmark):
    name = "maze"
    component_names = COMPONENTS
    splits = {s: n for s, (_, n) in SPLIT_SEEDS.items()}
    answer_tag = "route"
    default_temperature = 0.7
    default_top_p = 1.0
    # the generator keeps a maze only when the gold-then-diamond route does not fit in its step budget
    # (maze_env), so no route gets gold, diamond, completion and avoid_lava all at 1
    pass_reachable = False
    pass_unreachable_why = "no route within the step budget collects both corners' items"

    options_spec = {
        "reward_mode": Option("convex_bonus", "reward shaping of the route", tuple(REWARD_MODES)),
        "parse": Option("paper", "how routes are read: the authors' reading or the lenient one", PARSE_MODES),
        "base_seed": Option(None, "first maze seed of a custom split (with n)"),
        "n": Option(None, "number of mazes of the split"),
    }

    def __init__(self, **options: Any):
        super().__init__(**options)
        self.reward_mode = self.options["reward_mode"]
        self.parse_mode = self.options["parse"]
        bs, n = self.options.pop("base_seed"), self.options.pop("n")
        self.base_seed = None if bs is None else _int_option("base_seed", bs, 0)
        self.n = None if n is None else _int_option("n", n, 1)
        # base_seed / n are recorded only when set, so runs of the named splits keep their identity
        if self.base_seed is not None:
            self.options["base_seed"] = self.base_seed
        if self.n is not None:
            self.options["n"] = self.n

    # ---- data -------------------------------------------------------------------------------------
    def split_spec(self, split: str) -> tuple[str, int, int]:
        """(id label, base seed, size) of ``split`` under this task's ``base_seed`` / ``n`` options."""
        if self.base_seed is None:
            self.check_split(split, SPLIT_SEEDS, " (or choose one with --task-args base_seed=...,n=...)")
        base, n = SPLIT_SEEDS.get(split, (None, 100))
        if self.base_seed is not None and self.base_seed != base:
            base, label = self.base_seed, f"s{self.base_seed}"
        else:
            label = split
        return label, int(base), int(self.n if self.n is not None else n)

    def load(self, split: str, *, path: str | None = None, limit: int | None = None) -> list[Problem]:
        """Generate the split. The task is synthetic, so a data path is refused rather than ignored: a
        user who passes one expects those mazes to be evaluated."""
        if path is not None:
            raise ValueError(f"maze is generated, not read from files: drop --data-path {path} and choose "
                             "the mazes with --split train|test|val or --task-args base_seed=...,n=...")
        label, base, n = self.split_spec(split)
        if limit is not None:
            n = max(0, min(n, int(limit)))
        return maze_problems(label, base, n)

    def local_size(self, split: str) -> int | None:
        return self.split_spec(split)[2]  # generated: every split is local

    # ---- prompts ----------------------------------------------------------------------------------
    def _rules(self, inst: MazeInstance, steps: str) -> str:
        """The authors' single-answer prompt up to the output instruction (``steps``: "" or " per route")."""
        bonus_line = ("- Visiting a B cell multiplies your other scores — explore!"
                      if self.reward_mode == "convex_bonus" else
                      "- Visiting a B cell does not change your score.")
        n = inst.size
        return "\n".join([
            f"Navigate a {n}x{n} maze from S to E. Collect gold and diamonds, avoid lava.",
            "",
            "Grid:",
            inst.render(),
            "",
            "- Move: UP, DOWN, LEFT, RIGHT. # is a wall — you cannot enter it.",
            "- Do not leave the grid.",
            "- Collect: G (Gold), D (Diamond), B (Bonus) tiles by stepping on them.",
            "- Avoid: L (Lava) tiles. Stepping on lava costs you.",
            bonus_line,
            "- You MUST reach E. If you don't reach E, your score is zero everywhere.",
            "- Items only count if collected BEFORE you reach E (the trajectory ends at E).",
            f"- You have {inst.budget} steps{steps}.",
            "",
            f"This maze has {len(inst.gold)} Gold, {len(inst.diamond)} Diamond, {len(inst.lava)} Lava, "
            "and 1 Bonus tiles.",
        ])

    @staticmethod
    def _compact(inst: MazeInstance) -> str:
        return f"{inst.render()}\nBudget: {inst.budget}"

    def prompt(self, problem: Problem, *, style: str = "full") -> Messages:
        inst = MazeInstance.from_problem(problem)
        self._check_style(style)
        if style == "compact":
            return user(self._compact(inst) + "\nAnswer: <answer>moves</answer>")
        return user(self._rules(inst, "") + "\nOutput moves in <answer>...</answer> tags, "
                    "e.g., <answer>UP UP RIGHT</answer>.")

    def multi_prompt(self, problem: Problem, m: int, *, style: str = "full") -> Messages:
        inst = MazeInstance.from_problem(problem)
        self._check_style(style)
        m = int(m)
        if style == "compact":
            tags = " ".join(f"<route_{i}>...</route_{i}>" for i in range(1, m + 1))
            return user(self._compact(inst) + f"\nAnswer: {m} different routes: {tags}")
        tags = ", ".join(f"<route_{i}>...</route_{i}>" for i in range(1, m + 1))
        return user(self._rules(inst, " per route") + "\n"
                    f"Reason briefly about the maze, then provide {m} genuinely different routes from S to E. "
                    "Each route is a sequence of UP/DOWN/LEFT/RIGHT moves (space-separated). "
                    f"Wrap each route in numbered tags ({tags}). "
                    "Inside each tag put ONLY moves (no arrows, no coordinates, no prose); any reasoning goes "
                    "outside the tags. Each route must independently reach E within the per-route step budget "
                    "stated above (score is zero if it doesn't).\n"
                    "Format example (m=3):\n"
                    "  <route_1>RIGHT RIGHT RIGHT RIGHT DOWN DOWN DOWN DOWN</route_1>\n"
                    "  <route_2>DOWN DOWN DOWN DOWN RIGHT RIGHT RIGHT RIGHT</route_2>\n"
                    "  <route_3>RIGHT DOWN RIGHT DOWN RIGHT DOWN RIGHT DOWN</route_3>")

    def mutation_prompt(self, problem: Problem, parent: Shown, inspirations: Sequence[Shown], m: int, *,
                        style: str = "full") -> Messages:
        """The maze, the parent route with its reward vector, up to two inspirations with theirs, and a
        request for m routes that improve on the parent or trade its components differently.

        Routes are shown as move words (what the paper's parser reads) and rewards with two decimals
        in component order; the answer format is the task's own (``<route_i>`` for m > 1, ``<answer>``
        for m = 1), so children are parsed and scored exactly as sampled answers are. The compact form
        is sized for the bundled tiny models' 512-token context (about 190 tokens with a 25-move parent
        and two inspirations, leaving room for three routes)."""
        inst = MazeInstance.from_problem(problem)
        self._check_style(style)
        m = int(m)
        shown = [("Parent", parent)] + [("Other", c) for c in list(inspirations)[:2]]
        if style == "compact":
            lines = [f"{label}: {_route_words(self, c.answer)} | {_scores(c.reward)}" for label, c in shown]
            if m == 1:
                ask = "Answer: a better route: <answer>moves</answer>"
            else:
                tags = " ".join(f"<route_{i}>...</route_{i}>" for i in range(1, m + 1))
                ask = f"Answer: {m} better or different routes: {tags}"
            return user(self._compact(inst) + "\n" + "\n".join(lines) + "\n" + ask)
        names = ", ".join(COMPONENTS)
        lines = []
        for label, c in shown:
            desc = "the route to improve" if label == "Parent" else "another route found so far"
            lines.append(f"{label} ({desc}): {_route_words(self, c.answer)}\n"
                         f"  its scores ({names}): {_scores(c.reward)}")
        steps = "" if m == 1 else " per route"
        head = self._rules(inst, steps) + "\n\n" + "\n".join(lines) + "\n\n"
        if m == 1:
            return user(head + "Write one route that scores higher than the parent (or gets a different mix of "
                        "gold, diamonds and lava avoidance). Output moves in <answer>...</answer> tags, "
                        "e.g., <answer>UP UP RIGHT</answer>.")
        tags = ", ".join(f"<route_{i}>...</route_{i}>" for i in range(1, m + 1))
        return user(head + f"Write {m} genuinely different routes, each improving on the parent or trading its "
                    f"scores differently. Wrap each route in numbered tags ({tags}); inside each tag put ONLY "
                    "space-separated UP/DOWN/LEFT/RIGHT moves.")

    @staticmethod
    def _check_style(style: str) -> None:
        if style not in STYLES:
            raise ValueError(f"unknown prompt style {style!r}; known: {', '.join(STYLES)}")

    # ---- parsing ----------------------------------------------------------------------------------
    def parse(self, completion: str, m: int | None = None) -> list[str | None]:
        if m is None:
            return [self.parse_single(completion)]
        if self.parse_mode == "paper":
            return paper_parse_multi(completion, int(m), self.answer_tag)
        return parse_multi(completion, int(m), self.answer_tag)

    def parse_single(self, completion: str) -> str | None:
        if self.parse_mode == "paper":
            return paper_parse_single(completion)
        return parse_single(completion)

    def moves(self, answer: str | None) -> list[str]:
        """The move list of a parsed answer under this task's parse mode."""
        return paper_moves(answer) if self.parse_mode == "paper" else parse_moves(answer)

    # ---- scoring ----------------------------------------------------------------------------------
    def reward(self, problem: Problem, answer: str | None) -> np.ndarray:
        moves = self.moves(answer)
        if not moves:
            return np.zeros(self.d)
        r, _ = simulate(MazeInstance.from_problem(problem), moves, self.reward_mode)
        return r

    def simulate(self, problem: Problem, answer: str | Sequence[str] | None) -> tuple[np.ndarray, dict[str, Any]]:
        """Reward and episode info for an answer string or a move list."""
        moves = self.moves(answer) if isinstance(answer, str) or answer is None else list(answer)
        return simulate(MazeInstance.from_problem(problem), moves, self.reward_mode)

    def dedup_key(self, problem: Problem, answer: str | None, r: np.ndarray) -> Any:
        """Two answers of a chain are duplicates when they read as the same move sequence (the authors'
        training scorer; an answer without moves has no key: it is dropped like a missing one)."""
        moves = self.moves(answer)
        return tuple(moves) if moves else None


def _route_words(task: "Maze", answer: str | None) -> str:
    """An answer as the move words the parser reads from it ("-" for a route with no move)."""
    moves = task.moves(answer)
    return " ".join(moves) if moves else "-"


def _scores(reward: Sequence[float]) -> str:
    return " ".join(f"{float(x):.2f}".rstrip("0").rstrip(".") if float(x) != 0 else "0" for x in reward)


def _int_option(name: str, value: Any, lo: int) -> int:
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"maze option {name} must be an integer, got {value!r}") from None
    if v < lo:
        raise ValueError(f"maze option {name} must be >= {lo}, got {v}")
    return v


def best_route(maze: Any, weights: Sequence[float], reward_mode: str = "convex_bonus") -> list[str]:
    """A route maximising ``weights . r`` within the budget (see :mod:`vpo_harness.benchmarks.maze_search`)."""
    from vpo_harness.benchmarks.maze_search import best_route as _best
    return _best(maze, weights, reward_mode)


__all__ = ["Maze", "MazeInstance", "generate_maze", "maze_split", "simulate", "parse_moves", "parse_single",
           "parse_multi", "paper_moves", "paper_parse_single", "paper_parse_multi", "PARSE_MODES", "best_route", "reward_from_counts", "MOVES", "COMPONENTS", "REWARD_MODES",
           "SPLIT_SEEDS"]
