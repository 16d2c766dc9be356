"""Maze world: seeded generator, the instance record and the move simulator (no prompts, no parsing).

Conventions
-----------
* Positions are ``(row, col)``; row 0 is the top, so ``UP`` is ``row - 1`` and ``RIGHT`` is ``col + 1``.
* ``grid`` holds only the structure: ``'#'`` wall, ``'.'`` free. Start, exit, items, lava and the bonus
  tile are separate fields and are drawn on top by :meth:`MazeInstance.render`.
* A maze is a pure function of its seed: attempt ``a`` (0, 1, 2, ...) draws from
  ``numpy.random.default_rng([seed, a])`` and the first attempt that passes the rejection rules is kept.

Generation (docs/benchmarks.md, "Maze")
---------------------------------------
1. 9x9 all walls; randomized Prim's algorithm carves a perfect maze on the cells with two even
   coordinates (25 rooms; the cells between two rooms are the passages). All four corners and the centre
   are rooms, hence free.
2. 18-28 of the remaining wall cells (drawn uniformly) are opened to make cycles.
3. A random diagonal gives S and E (random orientation); of the two other corners one (random) is the
   gold corner, the other the diamond corner. A zone is the free cells within Manhattan distance 2 of
   its corner (corner included); it holds ``min(k, zone size)`` items, k uniform in 3..5.
4. B is the centre (4, 4). 3-5 lava tiles on free cells with row and column in 2..6, never on B.
5. Distances are BFS step counts through free cells (lava is crossable); E is never an intermediate
   cell (the episode would end there). ``budget = max(d(S,G) + d(G,E), d(S,D) + d(D,E)) + 7`` with G, D
   the two corners.
6. Rejected (and redrawn with the next attempt) when a zone has fewer than 3 free cells, when both
   corners fit in one route within the budget (``min(d(S,G)+d(G,D)+d(D,E), d(S,D)+d(D,G)+d(G,E)) <=
   budget``), or when no lava-free S->E path fits in the budget.

Simulation
----------
Each move uses one step. A move into a wall or off the grid uses the step and leaves the agent in place.
Lava can be crossed; each distinct lava tile stepped on counts once as hit. Reaching E ends the episode;
moves after E or beyond the budget are ignored. Items (and B) count once, when stepped on before E.

Reward ``r = [completion, gold, diamond, avoid_lava]``, the zero vector unless E is reached within the
budget. ``linear``: gold/diamond = fraction of the zone's items collected, avoid_lava = 1 - hit/total.
``convex_bonus``: those three are squared, multiplied by 1.5 when B was visited, clipped to [0, 1].
"""
from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

SIZE = 9
CENTER = (SIZE // 2, SIZE // 2)
BUDGET_SLACK = 7
EXTRA_OPEN_RANGE = (18, 28)      # inclusive
ITEMS_RANGE = (3, 5)             # inclusive, per zone
LAVA_RANGE = (3, 5)              # inclusive
LAVA_BAND = (2, 6)               # rows/cols allowed for lava, inclusive
ZONE_RADIUS = 2
MAX_ATTEMPTS = 10_000

COMPONENTS = ("completion", "gold", "diamond", "avoid_lava")
REWARD_MODES = ("linear", "convex_bonus")
MOVES = ("UP", "DOWN", "LEFT", "RIGHT")
DELTAS = {"UP": (-1, 0), "DOWN": (1, 0), "LEFT": (0, -1), "RIGHT": (0, 1)}
CORNERS = ((0, 0), (0, SIZE - 1), (SIZE - 1, 0), (SIZE - 1, SIZE - 1))
#: move tokens (matched case-insensitively) -> move
MOVE_WORDS = {"UP": "UP", "DOWN": "DOWN", "LEFT": "LEFT", "RIGHT": "RIGHT",
              "U": "UP", "D": "DOWN", "L": "LEFT", "R": "RIGHT"}
_LETTERS = {"U": "UP", "D": "DOWN", "L": "LEFT", "R": "RIGHT"}
_TOKEN_RE = re.compile(r"[A-Za-z]+")
_RUN_RE = re.compile(r"[UDLR]+")

Pos = tuple[int, int]


def _pos(p: Iterable[Any]) -> Pos:
    r, c = p
    return (int(r), int(c))


@dataclass(frozen=True)
class MazeInstance:
    """One maze. JSON round trip through :meth:`to_data` / :meth:`from_data` (lists for tuples)."""

    seed: int
    grid: tuple[str, ...]               # SIZE strings of '#'/'.'
    start: Pos
    exit: Pos
    gold_corner: Pos
    diamond_corner: Pos
    gold: tuple[Pos, ...]               # item cells of the gold zone
    diamond: tuple[Pos, ...]            # item cells of the diamond zone
    lava: tuple[Pos, ...]
    bonus: Pos
    budget: int
    attempt: int = 0                    # which derived sub-seed produced it
    _free: frozenset = field(default=frozenset(), repr=False, compare=False)

    def __post_init__(self) -> None:
        free = frozenset((r, c) for r, row in enumerate(self.grid) for c, ch in enumerate(row) if ch != "#")
        object.__setattr__(self, "_free", free)

    # ---- basic queries ---------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self.grid)

    def is_free(self, p: Pos) -> bool:
        return p in self._free

    @property
    def free_cells(self) -> frozenset:
        return self._free

    def zone(self, corner: Pos) -> list[Pos]:
        return zone_cells(self.grid, corner)

    # ---- serialisation ---------------------------------------------------------------------------
    def to_data(self) -> dict[str, Any]:
        return {
            "seed": self.seed, "attempt": self.attempt, "size": self.size, "grid": list(self.grid),
            "start": list(self.start), "exit": list(self.exit),
            "gold_corner": list(self.gold_corner), "diamond_corner": list(self.diamond_corner),
            "gold": [list(p) for p in self.gold], "diamond": [list(p) for p in self.diamond],
            "lava": [list(p) for p in self.lava], "bonus": list(self.bonus), "budget": self.budget,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "MazeInstance":
        return cls(seed=int(data["seed"]), grid=tuple(str(r) for r in data["grid"]),
                   start=_pos(data["start"]), exit=_pos(data["exit"]),
                   gold_corner=_pos(data["gold_corner"]), diamond_corner=_pos(data["diamond_corner"]),
                   gold=tuple(_pos(p) for p in data["gold"]), diamond=tuple(_pos(p) for p in data["diamond"]),
                   lava=tuple(_pos(p) for p in data["lava"]), bonus=_pos(data["bonus"]),
                   budget=int(data["budget"]), attempt=int(data.get("attempt", 0)))

    @classmethod
    def from_problem(cls, problem: Any) -> "MazeInstance":
        """From a :class:`benchmarks.base.Problem` (or its ``data`` dict, or an instance)."""
        if isinstance(problem, MazeInstance):
            return problem
        data = problem if isinstance(problem, dict) else problem.data
        return cls.from_data(data)

    # ---- text ------------------------------------------------------------------------------------
    def symbol_rows(self, *, show_bonus: bool = True) -> list[str]:
        """Rows of one symbol per cell: # . S E G D ~ (and B when ``show_bonus``)."""
        cells = [list(row) for row in self.grid]
        if show_bonus:
            cells[self.bonus[0]][self.bonus[1]] = "B"
        for p in self.lava:
            cells[p[0]][p[1]] = "~"
        for p in self.gold:
            cells[p[0]][p[1]] = "G"
        for p in self.diamond:
            cells[p[0]][p[1]] = "D"
        cells[self.start[0]][self.start[1]] = "S"
        cells[self.exit[0]][self.exit[1]] = "E"
        return ["".join(row) for row in cells]

    def render(self, *, show_bonus: bool = True, sep: str = " ") -> str:
        """The grid as text, one row per line, cells separated by ``sep``."""
        return "\n".join(sep.join(row) for row in self.symbol_rows(show_bonus=show_bonus))


# ---- geometry helpers ------------------------------------------------------------------------------

def zone_cells(grid: Sequence[str], corner: Pos) -> list[Pos]:
    n = len(grid)
    out = []
    for r in range(n):
        for c in range(n):
            if abs(r - corner[0]) + abs(c - corner[1]) <= ZONE_RADIUS and grid[r][c] != "#":
                out.append((r, c))
    return out


def bfs(grid: Sequence[str], source: Pos, *, blocked: Iterable[Pos] = (),
        no_pass: Iterable[Pos] = ()) -> dict[Pos, int]:
    """Step distances from ``source`` through free cells. ``blocked`` cells are never entered;
    ``no_pass`` cells may be reached but not left (used for E, which ends the episode)."""
    n = len(grid)
    blocked = set(blocked)
    no_pass = set(no_pass)
    dist = {source: 0}
    q = deque([source])
    while q:
        p = q.popleft()
        if p in no_pass and p != source:
            continue
        d = dist[p] + 1
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            nb = (p[0] + dr, p[1] + dc)
            if 0 <= nb[0] < n and 0 <= nb[1] < n and grid[nb[0]][nb[1]] != "#" and nb not in blocked \
                    and nb not in dist:
                dist[nb] = d
                q.append(nb)
    return dist


_INF = 10**9


def _prim(rng: np.random.Generator, n: int) -> list[list[str]]:
    cells = [["#"] * n for _ in range(n)]
    rooms = [(r, c) for r in range(0, n, 2) for c in range(0, n, 2)]
    first = rooms[int(rng.integers(len(rooms)))]
    in_maze = {first}
    cells[first[0]][first[1]] = "."
    frontier: list[Pos] = []

    def add_frontier(p: Pos) -> None:
        for dr, dc in ((-2, 0), (2, 0), (0, -2), (0, 2)):
            q = (p[0] + dr, p[1] + dc)
            if 0 <= q[0] < n and 0 <= q[1] < n and q not in in_maze and q not in frontier:
                frontier.append(q)

    add_frontier(first)
    while frontier:
        q = frontier.pop(int(rng.integers(len(frontier))))
        nbrs = [(q[0] + dr, q[1] + dc) for dr, dc in ((-2, 0), (2, 0), (0, -2), (0, 2))]
        nbrs = [p for p in nbrs if p in in_maze]
        p = nbrs[int(rng.integers(len(nbrs)))]
        cells[q[0]][q[1]] = "."
        cells[(p[0] + q[0]) // 2][(p[1] + q[1]) // 2] = "."
        in_maze.add(q)
        add_frontier(q)
    return cells


def _attempt(seed: int, attempt: int) -> tuple[MazeInstance | None, str]:
    """One draw; returns (instance, "") or (None, reason)."""
    n = SIZE
    rng = np.random.default_rng([int(seed), int(attempt)])
    cells = _prim(rng, n)
    walls = [(r, c) for r in range(n) for c in range(n) if cells[r][c] == "#"]
    k = int(rng.integers(EXTRA_OPEN_RANGE[0], EXTRA_OPEN_RANGE[1] + 1))
    for i in sorted(rng.choice(len(walls), size=min(k, len(walls)), replace=False).tolist()):
        r, c = walls[i]
        cells[r][c] = "."
    grid = tuple("".join(row) for row in cells)

    diag = int(rng.integers(2))
    a, b = ((0, 0), (n - 1, n - 1)) if diag == 0 else ((0, n - 1), (n - 1, 0))
    start, exit_ = (a, b) if int(rng.integers(2)) == 0 else (b, a)
    others = [c for c in CORNERS if c not in (start, exit_)]
    if int(rng.integers(2)) == 1:
        others.reverse()
    gold_corner, diamond_corner = others

    zones = {}
    items = {}
    for name, corner in (("gold", gold_corner), ("diamond", diamond_corner)):
        z = zone_cells(grid, corner)
        zones[name] = z
        want = int(rng.integers(ITEMS_RANGE[0], ITEMS_RANGE[1] + 1))
        if len(z) < ITEMS_RANGE[0]:
            return None, f"{name} zone has {len(z)} free cells"
        idx = rng.choice(len(z), size=min(want, len(z)), replace=False)
        items[name] = tuple(sorted(z[i] for i in idx.tolist()))

    bonus = CENTER
    lo, hi = LAVA_BAND
    cand = [(r, c) for r in range(lo, hi + 1) for c in range(lo, hi + 1)
            if grid[r][c] != "#" and (r, c) != bonus]
    want = int(rng.integers(LAVA_RANGE[0], LAVA_RANGE[1] + 1))
    if len(cand) < LAVA_RANGE[0]:
        return None, "too few lava candidates"
    idx = rng.choice(len(cand), size=min(want, len(cand)), replace=False)
    lava = tuple(sorted(cand[i] for i in idx.tolist()))

    d_s = bfs(grid, start, no_pass=[exit_])
    d_e = bfs(grid, exit_)
    d_g = bfs(grid, gold_corner, no_pass=[exit_])
    via_g = d_s.get(gold_corner, _INF) + d_e.get(gold_corner, _INF)
    via_d = d_s.get(diamond_corner, _INF) + d_e.get(diamond_corner, _INF)
    budget = max(via_g, via_d) + BUDGET_SLACK
    gd = d_g.get(diamond_corner, _INF)
    both = min(d_s.get(gold_corner, _INF) + gd + d_e.get(diamond_corner, _INF),
               d_s.get(diamond_corner, _INF) + gd + d_e.get(gold_corner, _INF))
    if both <= budget:
        return None, "both corners fit in one route"
    safe = bfs(grid, start, blocked=lava).get(exit_, _INF)
    if safe > budget:
        return None, "no lava-free route within the budget"
    return MazeInstance(seed=int(seed), grid=grid, start=start, exit=exit_, gold_corner=gold_corner,
                        diamond_corner=diamond_corner, gold=items["gold"], diamond=items["diamond"],
                        lava=lava, bonus=bonus, budget=int(budget), attempt=attempt), ""


_CACHE: dict[int, MazeInstance] = {}


def generate_maze(seed: int) -> MazeInstance:
    """The maze of ``seed`` (deterministic; rejected draws are redrawn with sub-seeds [seed, attempt])."""
    seed = int(seed)
    if seed < 0:
        raise ValueError(f"maze seed must be >= 0, got {seed}")
    hit = _CACHE.get(seed)
    if hit is not None:
        return hit
    for attempt in range(MAX_ATTEMPTS):
        inst, _ = _attempt(seed, attempt)
        if inst is not None:
            if len(_CACHE) < 100_000:
                _CACHE[seed] = inst
            return inst
    raise RuntimeError(f"no valid maze for seed {seed} after {MAX_ATTEMPTS} attempts")


# ---- simulation and reward -------------------------------------------------------------------------

def is_move_token(tok: str) -> bool:
    return tok.upper() in MOVE_WORDS or (len(tok) > 1 and _RUN_RE.fullmatch(tok) is not None)


def parse_moves(text: Any) -> list[str]:
    """Moves of an answer string. Tokens are the runs of ASCII letters (anything else separates them):
    UP/DOWN/LEFT/RIGHT and U/D/L/R in any case, and capital-only runs of U/D/L/R read letter by letter
    (``UURD``). Every other token is ignored. Never raises (non-strings give [])."""
    if not isinstance(text, str):
        return []
    out: list[str] = []
    for tok in _TOKEN_RE.findall(text):
        mv = MOVE_WORDS.get(tok.upper())
        if mv is not None:
            out.append(mv)
        elif len(tok) > 1 and _RUN_RE.fullmatch(tok):
            out.extend(_LETTERS[ch] for ch in tok)
    return out


def reward_from_counts(n_gold: int, n_diamond: int, n_lava_hit: int, bonus: bool, *, total_gold: int,
                       total_diamond: int, total_lava: int, completed: bool = True,
                       reward_mode: str = "linear") -> np.ndarray:
    """Reward vector for an episode summary (used by the simulator and by the route search)."""
    if reward_mode not in REWARD_MODES:
        raise ValueError(f"unknown reward_mode {reward_mode!r}; known: {', '.join(REWARD_MODES)}")
    if not completed:
        return np.zeros(4)
    g = n_gold / total_gold if total_gold else 1.0
    d = n_diamond / total_diamond if total_diamond else 1.0
    a = 1.0 - (n_lava_hit / total_lava if total_lava else 0.0)
    r = np.array([1.0, g, d, a], dtype=float)
    if reward_mode == "convex_bonus":
        r[1:] = r[1:] ** 2 * (1.5 if bonus else 1.0)
    return np.clip(r, 0.0, 1.0)


def simulate(maze: Any, moves: Sequence[str] | str, reward_mode: str = "linear") -> tuple[np.ndarray, dict[str, Any]]:
    """Run ``moves``: a list of moves (UP/DOWN/LEFT/RIGHT or U/D/L/R, any case; anything else is skipped
    without using a step) or an answer string (read with :func:`parse_moves`).

    Returns the reward vector and an info dict: ``reached_exit``, ``steps`` (steps used, bumps included),
    ``bumps``, ``ignored`` (moves after E or beyond the budget), ``path`` (positions, start included),
    ``gold``/``diamond``/``lava_hit`` (cells, in order), ``bonus_visited``, ``final``.
    """
    maze = MazeInstance.from_problem(maze)
    if isinstance(moves, str):
        moves = parse_moves(moves)
    gold = set(maze.gold)
    diamond = set(maze.diamond)
    lava = set(maze.lava)
    pos = maze.start
    path = [pos]
    got_g: list[Pos] = []
    got_d: list[Pos] = []
    hit: list[Pos] = []
    bonus = False
    steps = bumps = ignored = 0
    done = False
    n = maze.size
    for mv in moves:
        delta = DELTAS.get(MOVE_WORDS.get(mv.upper(), "")) if isinstance(mv, str) else None
        if delta is None:
            continue
        if done or steps >= maze.budget:
            ignored += 1
            continue
        steps += 1
        nxt = (pos[0] + delta[0], pos[1] + delta[1])
        if not (0 <= nxt[0] < n and 0 <= nxt[1] < n) or not maze.is_free(nxt):
            bumps += 1
            path.append(pos)
            continue
        pos = nxt
        path.append(pos)
        if pos == maze.exit:
            done = True
            continue
        if pos in gold and pos not in got_g:
            got_g.append(pos)
        elif pos in diamond and pos not in got_d:
            got_d.append(pos)
        elif pos in lava and pos not in hit:
            hit.append(pos)
        elif pos == maze.bonus:
            bonus = True
    r = reward_from_counts(len(got_g), len(got_d), len(hit), bonus, total_gold=len(maze.gold),
                           total_diamond=len(maze.diamond), total_lava=len(maze.lava), completed=done,
                           reward_mode=reward_mode)
    info = {"reached_exit": done, "steps": steps, "bumps": bumps, "ignored": ignored, "path": path,
            "gold": got_g, "diamond": got_d, "lava_hit": hit, "bonus_visited": bonus, "final": pos}
    return r, info
