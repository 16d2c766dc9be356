"""Maze world: the paper's seeded generator, the instance record and the move simulator.

Conventions
-----------
* Positions are ``(row, col)``; row 0 is the top, so ``UP`` is ``row - 1`` and ``RIGHT`` is ``col + 1``.
* ``grid`` holds only the structure: ``'#'`` wall, ``'.'`` free. Start, exit, items, lava and the bonus
  tile are separate fields and are drawn on top by :meth:`MazeInstance.render` with the paper's symbols
  (S E G D L B).
* A maze is a pure function of its generator seed; a split of size n from base seed b is the first n
  seeds b, b+1, ... that the generator accepts (:func:`maze_split`).

Generation: the VPO authors' generator (``ryanboldi/vpo`` ``vpo_tasks/maze.py``), reproduced call for
call with Python's ``random.Random(seed)`` as ``docs/maze_generator.md`` describes it: randomized Prim on
cells, 18-28 extra openings, S/E on a random diagonal, the other two corners shuffled into the gold and
diamond corners, B at the centre; rejected unless E is reachable, every corner/centre detour is at most
90 moves, the gold-then-diamond route does not fit in ``budget = max(via gold, via diamond) + 7``, both
zones (free cells within Manhattan distance 2 of the corner) hold >= 3 cells, and a lava-free S->E path
fits in the budget. Tested cell for cell against the authors' 1,100 mazes
(``shared/data/maze/authors_mazes.jsonl``).

Simulation
----------
Each move uses one step. A move into a wall or off the grid uses the step and leaves the agent in place.
Lava can be crossed; each distinct lava tile stepped on counts once as hit. Reaching E ends the episode;
moves after E or beyond the budget are ignored. Items (and B) count once, when stepped on before E.

Reward ``r = [completion, gold, diamond, avoid_lava]``, the zero vector unless E is reached within the
budget. ``linear``: gold/diamond = fraction of the zone's items collected, avoid_lava = 1 - hit/total.
``convex_bonus`` (the paper's data): those three are squared, multiplied by 1.5 when B was visited,
clipped to [0, 1].
"""
from __future__ import annotations

import random
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
            "seed": self.seed, "size": self.size, "grid": list(self.grid),
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
                   budget=int(data["budget"]))

    @classmethod
    def from_problem(cls, problem: Any) -> "MazeInstance":
        """From a :class:`vpo_harness.benchmarks.base.Problem` (or its ``data`` dict, or an instance)."""
        if isinstance(problem, MazeInstance):
            return problem
        data = problem if isinstance(problem, dict) else problem.data
        return cls.from_data(data)

    # ---- text ------------------------------------------------------------------------------------
    def symbol_rows(self, *, show_bonus: bool = True) -> list[str]:
        """Rows of one symbol per cell: # . S E G D L (and B when ``show_bonus``), the paper's symbols."""
        cells = [list(row) for row in self.grid]
        if show_bonus:
            cells[self.bonus[0]][self.bonus[1]] = "B"
        for p in self.lava:
            cells[p[0]][p[1]] = "L"
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


_UNREACHABLE = 98          # a leg with no path counts as 98 moves (the paper's generator)
_MAX_VIA = 90              # reject when any corner/centre detour is longer
_NEIGHBOURS = ((-1, 0), (1, 0), (0, -1), (0, 1))     # up, down, left, right: the order of every scan


def _open_neighbours(cells: list[list[str]], r: int, c: int) -> int:
    n = len(cells)
    return sum(1 for dr, dc in _NEIGHBOURS
               if 0 <= r + dr < n and 0 <= c + dc < n and cells[r + dr][c + dc] != "#")


def _prim(rng: random.Random, n: int) -> list[list[str]]:
    """Randomised Prim on cells (step 1 of docs/maze_generator.md): a frontier list that may hold
    duplicates; a frontier wall opens only when exactly one of its neighbours is open."""
    cells = [["#"] * n for _ in range(n)]
    sr = rng.randrange(n)
    sc = rng.randrange(n)
    cells[sr][sc] = "."
    frontier = [(sr + dr, sc + dc) for dr, dc in _NEIGHBOURS if 0 <= sr + dr < n and 0 <= sc + dc < n]
    while frontier:
        r, c = frontier.pop(rng.randrange(len(frontier)))
        if cells[r][c] != "#" or _open_neighbours(cells, r, c) != 1:
            continue
        cells[r][c] = "."
        frontier.extend((r + dr, c + dc) for dr, dc in _NEIGHBOURS
                        if 0 <= r + dr < n and 0 <= c + dc < n and cells[r + dr][c + dc] == "#")
    return cells


def build_maze(seed: int) -> MazeInstance | None:
    """The paper's maze for one generator seed, or None when the seed is rejected.

    Follows docs/maze_generator.md call for call with ``random.Random(seed)`` (the draws happen in this
    exact order, so every accepted seed reproduces the authors' instance cell for cell).
    """
    rng = random.Random(int(seed))
    n = SIZE
    cells = _prim(rng, n)
    k = rng.randint(*EXTRA_OPEN_RANGE)
    walls = [(r, c) for r in range(n) for c in range(n) if cells[r][c] == "#" and _open_neighbours(cells, r, c) >= 2]
    rng.shuffle(walls)
    for r, c in walls[:k]:
        cells[r][c] = "."
    start, exit_ = rng.choice((((0, 0), (n - 1, n - 1)), ((0, n - 1), (n - 1, 0))))
    others = [c for c in CORNERS if c not in (start, exit_)]
    rng.shuffle(others)
    gold_corner, diamond_corner = others
    for r, c in (start, exit_, gold_corner, diamond_corner, CENTER):
        cells[r][c] = "."
    grid = tuple("".join(row) for row in cells)
    d_s = bfs(grid, start)
    if exit_ not in d_s:
        return None

    def d(a: Pos, b: Pos) -> int:
        return (d_s if a == start else bfs(grid, a)).get(b, _UNREACHABLE)

    via_g = d(start, gold_corner) + d(gold_corner, exit_)
    via_d = d(start, diamond_corner) + d(diamond_corner, exit_)
    via_c = d(start, CENTER) + d(CENTER, exit_)
    if max(via_g, via_d, via_c) > _MAX_VIA:
        return None
    budget = max(via_g, via_d) + BUDGET_SLACK
    if d(start, gold_corner) + d(gold_corner, diamond_corner) + d(diamond_corner, exit_) <= budget:
        return None
    marked = {start, exit_, CENTER}
    zones = [[p for p in zone_cells(grid, corner) if p not in marked] for corner in (gold_corner, diamond_corner)]
    if min(len(z) for z in zones) < ITEMS_RANGE[0]:
        return None
    n_gold = rng.randint(ITEMS_RANGE[0], min(ITEMS_RANGE[1], len(zones[0])))
    n_diamond = rng.randint(ITEMS_RANGE[0], min(ITEMS_RANGE[1], len(zones[1])))
    gold = rng.sample(zones[0], n_gold)
    diamond = rng.sample(zones[1], n_diamond)
    taken = marked | set(gold) | set(diamond)
    lo, hi = LAVA_BAND
    interior = [(r, c) for r in range(lo, hi + 1) for c in range(lo, hi + 1)
                if grid[r][c] != "#" and (r, c) not in taken]
    n_lava = min(rng.randint(*LAVA_RANGE), len(interior))
    lava = rng.sample(interior, n_lava)
    safe = bfs(grid, start, blocked=lava).get(exit_)
    if safe is None or safe > budget:
        return None
    return MazeInstance(seed=int(seed), grid=grid, start=start, exit=exit_, gold_corner=gold_corner,
                        diamond_corner=diamond_corner, gold=tuple(sorted(gold)), diamond=tuple(sorted(diamond)),
                        lava=tuple(sorted(lava)), bonus=CENTER, budget=int(budget))


_SPLITS: dict[int, list[MazeInstance]] = {}


def maze_split(base_seed: int, n: int) -> list[MazeInstance]:
    """The first ``n`` accepted mazes counting seeds up from ``base_seed`` (index i = i-th accepted seed).

    Cached per base seed and extended on demand, so asking for 5 then 100 mazes generates each seed once.
    """
    base_seed, n = int(base_seed), int(n)
    if base_seed < 0:
        raise ValueError(f"maze base seed must be >= 0, got {base_seed}")
    got = _SPLITS.setdefault(base_seed, [])
    seed = got[-1].seed + 1 if got else base_seed
    tries = 0
    while len(got) < n:
        inst = build_maze(seed)
        seed += 1
        tries += 1
        if inst is not None:
            got.append(inst)
            tries = 0
        elif tries > MAX_ATTEMPTS:
            raise RuntimeError(f"no accepted maze in {MAX_ATTEMPTS} seeds after seed {seed - tries}")
    return got[:n]


def generate_maze(seed: int) -> MazeInstance:
    """The maze of an accepted generator ``seed`` (ValueError when the generator rejects that seed)."""
    inst = build_maze(int(seed))
    if inst is None:
        raise ValueError(f"the maze generator rejects seed {seed}; split seeds are the accepted ones "
                         "(see maze_split)")
    return inst


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


def rewards_if_stopped(maze: Any, moves: Sequence[str] | str, reward_mode: str = "linear") -> np.ndarray:
    """The reward of the route's first k moves scored as if it reached E right after them, for k = 0 ..
    the steps it uses (up to reaching E or the budget): row k of a (steps + 1, 4) array. Why: a route
    scores zero until it reaches E, so its real reward cannot say where its progress stopped; this
    can (``--cut plateau`` of prefix-mode search cuts where its scalar first reaches its best)."""
    maze = MazeInstance.from_problem(maze)
    _, info = simulate(maze, moves, reward_mode)
    gold, diamond, lava = set(maze.gold), set(maze.diamond), set(maze.lava)
    got_g: set[Pos] = set()
    got_d: set[Pos] = set()
    hit: set[Pos] = set()
    bonus = False
    out = []
    for k, pos in enumerate(info["path"]):
        if k > 0 and pos != maze.exit:
            got_g |= {pos} & gold
            got_d |= {pos} & diamond
            hit |= {pos} & lava
            bonus = bonus or pos == maze.bonus
        out.append(reward_from_counts(len(got_g), len(got_d), len(hit), bonus, total_gold=len(gold),
                                      total_diamond=len(diamond), total_lava=len(lava), completed=True,
                                      reward_mode=reward_mode))
    return np.array(out)


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
