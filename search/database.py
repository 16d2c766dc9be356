"""OpenEvolve's ``ProgramDatabase`` with every order it samples from fixed, so a search replays exactly.

OpenEvolve 0.4.1 keeps each island and the archive as ``set[str]`` of program ids and draws parents
and inspirations with ``random.choice(list(island))``, ``random.choices(...)`` and
``random.sample(...)``; ties in its sorts (best program, top programs, eviction, migrants, archive
worst) fall to the order it iterates ``programs``. The order a set of strings iterates in follows the
process's string-hash seed, and ``load`` fills ``programs`` in the file system's listing order, so the
same random draws pick different programs in two processes, or before and after a resume.

:class:`OrderedProgramDatabase` changes none of OpenEvolve's algorithms. It swaps the containers
under them: islands and the archive become :class:`SortedIdSet` and ``programs`` a
:class:`SortedIdMap`, which behave as the set and dict the code expects but iterate in program-id
order. The order is then a function of the contents alone (not of insertion history, hash seed or a
checkpoint's file listing), so there is no order to save or restore. Properties wrap whatever the
base class assigns (``__init__``, ``load``, ``_reconstruct_islands``, a strategy's rollback), so no
plain set can slip back in.

Two more sources of variation are closed here:

- randomness: OpenEvolve calls the ``random`` module's functions. :meth:`streams` points the name
  ``random`` inside ``openevolve.database`` and ``openevolve.prompt.sampler`` at this database's own
  ``random.Random`` for the duration of a call, so each problem has its own stream and no other
  thread's use of the global ``random`` (a grader, a client library) can touch it;
- ids: migrant copies and empty-island seeds get ``uuid.uuid4()`` ids, which end up as the
  ``parent_id`` of later rows; inside :meth:`streams` they are numbered uuid5 ids instead.

The state a checkpoint has to carry beyond OpenEvolve's own files (the random state, the copy
counter, the diversity reference set and cache, which OpenEvolve does not save) is
:meth:`extra_state` / :meth:`load_extra_state`.
"""
from __future__ import annotations

import bisect
import contextlib
import copy
import json
import os
import random
import types
import uuid
from collections.abc import Iterable, Iterator, MutableMapping, MutableSet
from typing import Any


class SortedIdSet(MutableSet):
    """A set of program ids that iterates in sorted order (OpenEvolve's island / archive sets)."""

    __slots__ = ("_members", "_order")

    def __init__(self, items: Iterable[str] = ()):
        self._members = set(items)
        self._order = sorted(self._members)

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> "SortedIdSet":
        return cls(it)

    def __contains__(self, x: object) -> bool:
        return x in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))  # a snapshot: callers may discard while iterating

    def __len__(self) -> int:
        return len(self._members)

    def add(self, x: str) -> None:
        if x not in self._members:
            self._members.add(x)
            bisect.insort(self._order, x)

    def discard(self, x: str) -> None:
        if x in self._members:
            self._members.remove(x)
            del self._order[bisect.bisect_left(self._order, x)]

    def copy(self) -> "SortedIdSet":
        return SortedIdSet(self._members)

    def intersection_update(self, other: Iterable[Any]) -> None:
        keep = set(other)
        for x in [x for x in self._order if x not in keep]:
            self.discard(x)

    def __repr__(self) -> str:
        return f"SortedIdSet({self._order!r})"


class SortedIdMap(MutableMapping):
    """A dict of programs by id that iterates in sorted id order (OpenEvolve's ``programs``)."""

    __slots__ = ("_d", "_order")

    def __init__(self, items: Any = ()):
        self._d: dict[str, Any] = dict(items)
        self._order = sorted(self._d)

    def __getitem__(self, k: str) -> Any:
        return self._d[k]

    def __setitem__(self, k: str, v: Any) -> None:
        if k not in self._d:
            bisect.insort(self._order, k)
        self._d[k] = v

    def __delitem__(self, k: str) -> None:
        del self._d[k]
        del self._order[bisect.bisect_left(self._order, k)]

    def __contains__(self, k: object) -> bool:
        return k in self._d

    def get(self, k: str, default: Any = None) -> Any:
        return self._d.get(k, default)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._d)

    def copy(self) -> "SortedIdMap":
        return SortedIdMap(self._d)

    def __repr__(self) -> str:
        return f"SortedIdMap({len(self._d)} programs)"


def _score(program: Any) -> float:
    return float((program.metrics or {}).get("combined_score", 0.0))


def _base() -> type:
    from openevolve.database import ProgramDatabase

    return ProgramDatabase


class OrderedProgramDatabase(_base()):  # type: ignore[misc]
    """``ProgramDatabase`` whose collections iterate in id order and whose randomness and copy ids
    come from this object (see the module docstring). Call its methods inside :meth:`streams`."""

    def __init__(self, config: Any, *, name: str, seed: int):
        self._name = name
        self.rand = random.Random(seed)
        self.copies = 0  # copies made so far (migrants, empty-island seeds): their ids are numbered
        self._codes: dict[int, str] = {}  # diversity cache key -> code, so the cache can be saved
        self.link_from: tuple[str, dict[str, str]] | None = None  # see _save_program
        self.saved_texts: dict[str, str] = {}
        outer = random.getstate()
        try:
            with self.streams():
                super().__init__(config)
        finally:
            random.setstate(outer)  # __init__ seeds the global random module with config.random_seed

    # ---- containers: whatever the base class assigns is wrapped ----------------------------------------
    @property
    def programs(self) -> SortedIdMap:
        return self._programs

    @programs.setter
    def programs(self, value: Any) -> None:
        self._programs = value if isinstance(value, SortedIdMap) else SortedIdMap(value)

    @property
    def islands(self) -> list[SortedIdSet]:
        return self._islands

    @islands.setter
    def islands(self, value: Any) -> None:
        self._islands = [v if isinstance(v, SortedIdSet) else SortedIdSet(v) for v in value]

    @property
    def archive(self) -> SortedIdSet:
        return self._archive

    @archive.setter
    def archive(self, value: Any) -> None:
        self._archive = value if isinstance(value, SortedIdSet) else SortedIdSet(value)

    # ---- randomness and ids -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def streams(self) -> Iterator[None]:
        """OpenEvolve's database and prompt sampler draw from ``self.rand`` and number copies from
        ``self.copies`` while inside. No awaits inside: the names are module globals."""
        import openevolve.database as oedb
        import openevolve.prompt.sampler as oesampler

        saved = (oedb.random, oesampler.random, oedb.uuid)
        oedb.random = oesampler.random = self.rand
        oedb.uuid = types.SimpleNamespace(uuid4=self._next_copy_id)
        try:
            yield
        finally:
            oedb.random, oesampler.random, oedb.uuid = saved

    def _next_copy_id(self) -> uuid.UUID:
        self.copies += 1
        return uuid.uuid5(uuid.NAMESPACE_URL, f"vpo-evolve/{self._name}/copy/{self.copies}")

    def sample_from_island(self, island_id: int, num_inspirations: int | None = None, *,
                           allow_zero: bool = True) -> tuple[Any, list[Any]]:
        """OpenEvolve's parent and inspiration draw; with ``allow_zero=False`` a parent whose score
        (``combined_score``) is 0 is replaced, while the island (else the database) holds programs
        scoring above 0, by one of those drawn uniformly from this database's stream. Why: a child
        continuing a zero-reward parent (a route that never reaches the exit) inherits nothing worth
        keeping, and OpenEvolve's exploration draw picks such parents as often as any."""
        parent, inspirations = super().sample_from_island(island_id, num_inspirations)
        if allow_zero or _score(parent) > 0:
            return parent, inspirations
        ids = [p for p in self.islands[island_id % len(self.islands)] if p in self.programs]
        better = [p for p in ids if _score(self.programs[p]) > 0] or \
            [p for p in self.programs if _score(self.programs[p]) > 0]
        if not better:
            return parent, inspirations
        chosen = self.programs[self.rand.choice(better)]
        return chosen, [p for p in inspirations if p.id != chosen.id]

    def _get_cached_diversity(self, program: Any) -> float:
        self._codes[hash(program.code)] = program.code
        return super()._get_cached_diversity(program)

    def snapshot(self) -> "OrderedProgramDatabase":
        """A copy that OpenEvolve's ``save`` can write from another thread while this database goes
        on changing: everything ``save`` reads is copied, the rest (config, caches) is shared."""
        from openevolve.database import Program

        snap = copy.copy(self)
        snap._programs = SortedIdMap({k: Program(**p.to_dict()) for k, p in self._programs.items()})
        snap._islands = [i.copy() for i in self._islands]
        snap._archive = self._archive.copy()
        snap.island_feature_maps = [dict(m) for m in self.island_feature_maps]
        snap.island_best_programs = list(self.island_best_programs)
        snap.island_generations = list(self.island_generations)
        snap.feature_stats = copy.deepcopy(self.feature_stats)
        snap.link_from, snap.saved_texts = None, {}
        return snap

    # ---- checkpoint files ---------------------------------------------------------------------------------
    #: ``link_from``, set on a snapshot before ``save``: the programs folder of the previous checkpoint and the text of
    #: each program file in it. A program whose file would read the same is hard-linked from there
    #: instead of written: creating a file costs about 40 times a link on ext4, and between two
    #: checkpoints most of the population is unchanged.
    #: After ``save``, ``saved_texts`` holds the text of every program file written (the next
    #: checkpoint's ``link_from``); both are set in ``__init__`` and reset by :meth:`snapshot`.

    def _save_program(self, program: Any, base_path: str | None = None, prompts: dict | None = None,
                      programs_dir: str | None = None) -> None:
        """OpenEvolve's program file (``to_dict`` plus the prompts, as JSON), linked when unchanged."""
        if programs_dir is None:  # OpenEvolve's own single-program call (``add`` with a db_path)
            super()._save_program(program, base_path, prompts=prompts, programs_dir=programs_dir)
            return
        d = program.to_dict()
        if prompts:
            d["prompts"] = prompts
        text = json.dumps(d)
        self.saved_texts[program.id] = text
        target = os.path.join(programs_dir, f"{program.id}.json")
        if self.link_from is not None and self.link_from[1].get(program.id) == text:
            try:
                os.link(os.path.join(self.link_from[0], f"{program.id}.json"), target)
                return
            except OSError:  # the old file is gone, or links are not supported here: write it
                pass
        with open(target, "w") as f:
            f.write(text)

    # ---- what a checkpoint must add to OpenEvolve's files ------------------------------------------------
    def extra_state(self) -> dict[str, Any]:
        version, state, gauss = self.rand.getstate()
        self._codes = {h: c for h, c in self._codes.items() if h in self.diversity_cache}
        cache = [[self._codes[h], v["value"]] for h, v in self.diversity_cache.items() if h in self._codes]
        return {"random_state": [version, list(state), gauss], "copies": self.copies,
                "diversity_reference_set": list(self.diversity_reference_set), "diversity_cache": cache}

    def load_extra_state(self, d: dict[str, Any]) -> None:
        v, state, gauss = d["random_state"]
        self.rand.setstate((v, tuple(state), gauss))
        self.copies = int(d["copies"])
        self.diversity_reference_set = list(d["diversity_reference_set"])
        self.diversity_cache, self._codes = {}, {}
        for code, value in d["diversity_cache"]:  # keyed by this process's string hash again
            self.diversity_cache[hash(code)] = {"value": value, "timestamp": 0.0}
            self._codes[hash(code)] = code
