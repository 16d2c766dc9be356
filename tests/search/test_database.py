"""OrderedProgramDatabase: OpenEvolve's database with orders that depend on contents only, its own
random stream, numbered copy ids, and a checkpoint round trip that continues the same draws."""
from __future__ import annotations

import inspect
import random
import re
from pathlib import Path

import pytest

from vpo_harness.search.database import OrderedProgramDatabase, SortedIdMap, SortedIdSet


def test_sorted_set_iterates_by_content_not_history() -> None:
    a, b = SortedIdSet(), SortedIdSet()
    for x in ["q", "b", "z", "a"]:
        a.add(x)
    for x in ["a", "z", "q", "b", "c"]:
        b.add(x)
    b.discard("c")
    assert list(a) == list(b) == ["a", "b", "q", "z"] and a == b and len(a) == 4
    a.add("b")  # no duplicate
    assert list(a) == ["a", "b", "q", "z"]
    for x in a:  # discarding while iterating is allowed (OpenEvolve cleans islands this way)
        a.discard(x)
    assert not a and list(a) == []
    s = SortedIdSet(["d", "c", "e"])
    assert isinstance(s - {"c"}, SortedIdSet) and list(s - {"c"}) == ["d", "e"]
    s.intersection_update({"e": 1, "c": 2})
    assert list(s) == ["c", "e"] and list(s.copy()) == ["c", "e"] and s.copy() is not s


def test_sorted_map_iterates_by_key() -> None:
    m = SortedIdMap()
    for k in ["k", "c", "x", "a"]:
        m[k] = k.upper()
    m["c"] = "C2"
    del m["x"]
    assert list(m) == ["a", "c", "k"] and list(m.values()) == ["A", "C2", "K"]
    assert list(m.items())[1] == ("c", "C2") and m.get("zz", 0) == 0 and "a" in m
    assert list(m.copy()) == ["a", "c", "k"]


def _config(**kw):
    from openevolve.config import DatabaseConfig

    base = dict(num_islands=2, population_size=30, archive_size=8, feature_dimensions=["complexity", "diversity"],
                feature_bins=4, migration_interval=3, migration_rate=0.5, log_prompts=False, random_seed=7)
    base.update(kw)
    return DatabaseConfig(**base)


def _fill(db: OrderedProgramDatabase, n: int, order: list[int]) -> None:
    from openevolve.database import Program

    with db.streams():
        for i in order[:n]:
            db.add(Program(id=f"p{i:03d}", code="x = 1\n" * (i % 7 + 1) + f"# {i}\n" * (i % 3),
                           metrics={"combined_score": (i * 37 % 11) / 10}), iteration=i, target_island=i % 2)
            db.increment_island_generation(island_idx=i % 2)
            if db.should_migrate():
                db.migrate_programs()


def _draws(db: OrderedProgramDatabase, k: int) -> list[tuple[str, list[str]]]:
    out = []
    with db.streams():
        for i in range(k):
            parent, insp = db.sample_from_island(i % 2, 3)
            out.append((parent.id, [p.id for p in insp]))
    return out


def test_containers_stay_ordered_after_load(tmp_path: Path) -> None:
    db = OrderedProgramDatabase(_config(), name="p", seed=1)
    _fill(db, 12, list(range(12)))
    with db.streams():
        db.save(str(tmp_path / "ck"), 11)
    again = OrderedProgramDatabase(_config(), name="p", seed=1)
    with again.streams():
        again.load(str(tmp_path / "ck"))
    assert isinstance(again.programs, SortedIdMap) and isinstance(again.archive, SortedIdSet)
    assert all(isinstance(i, SortedIdSet) for i in again.islands)
    assert list(again.programs) == list(db.programs) and [list(i) for i in again.islands] == [list(i) for i in db.islands]


def test_migrant_ids_are_numbered_not_random() -> None:
    a = OrderedProgramDatabase(_config(), name="prob", seed=3)
    b = OrderedProgramDatabase(_config(), name="prob", seed=3)
    _fill(a, 12, list(range(12)))
    _fill(b, 12, list(range(12)))
    copies = sorted(set(a.programs) - {f"p{i:03d}" for i in range(12)})
    assert copies and a.copies >= len(copies)  # migration happened and made copies
    assert copies == sorted(set(b.programs) - {f"p{i:03d}" for i in range(12)})
    # every uuid OpenEvolve's database makes goes through the name the shim replaces
    import openevolve.database as oedb

    src = inspect.getsource(oedb)
    assert set(re.findall(r"\buuid\.(\w+)", src)) == {"uuid4"}


def test_database_randomness_is_its_own() -> None:
    """Other users of the global random module (a grader thread, a client library) neither change
    the database's draws nor are changed by them; the base __init__'s random.seed is undone."""
    random.seed(123)
    before = random.getstate()
    a = OrderedProgramDatabase(_config(), name="p", seed=5)
    assert random.getstate() == before
    _fill(a, 10, list(range(10)))
    da = _draws(a, 6)
    assert random.getstate() == before
    b = OrderedProgramDatabase(_config(), name="p", seed=5)
    _fill(b, 10, list(range(10)))
    random.random()
    assert _draws(b, 6) == da


def test_programs_iterate_by_id_whatever_the_insertion_order() -> None:
    """``programs`` decides ties in OpenEvolve's sorts (best, top, eviction) and random parents:
    the same programs added in another order iterate the same."""
    from openevolve.database import Program

    order = list(range(10))
    shuffled = order[:]
    random.Random(4).shuffle(shuffled)
    seen = []
    for o in (order, shuffled):
        db = OrderedProgramDatabase(_config(num_islands=1, population_size=100, feature_dimensions=["score"]),
                                    name="p", seed=9)
        with db.streams():
            for i in o:
                db.programs[f"p{i:03d}"] = Program(id=f"p{i:03d}", code=str(i), metrics={"combined_score": 0.5})
            seen.append((list(db.programs), db.get_best_program().id, [p.id for p in db.get_top_programs(3)]))
    assert seen[0] == seen[1] and seen[0][0] == sorted(seen[0][0])


@pytest.mark.parametrize("dims", [["complexity", "diversity"], ["complexity"]])
def test_checkpoint_round_trip_continues_the_same_draws(tmp_path: Path, dims: list[str]) -> None:
    """Saved (OpenEvolve's files + extra_state) mid-run and loaded in a fresh database: the next
    admissions and draws are those of the database that kept running, the diversity cache included."""
    import json

    from openevolve.database import Program

    live = OrderedProgramDatabase(_config(feature_dimensions=dims), name="p", seed=11)
    _fill(live, 25, list(range(40)))
    _draws(live, 3)
    with live.streams():
        live.save(str(tmp_path / "ck"), 24)
    (tmp_path / "ck" / "extra.json").write_text(json.dumps(live.extra_state()))
    if "diversity" in dims:
        assert live.extra_state()["diversity_cache"] and live.extra_state()["diversity_reference_set"]

    back = OrderedProgramDatabase(_config(feature_dimensions=dims), name="p", seed=999)
    back.load_extra_state(json.loads((tmp_path / "ck" / "extra.json").read_text()))
    with back.streams():
        back.load(str(tmp_path / "ck"))

    def more(db: OrderedProgramDatabase) -> list:
        with db.streams():
            for i in range(25, 40):
                db.add(Program(id=f"p{i:03d}", code="z = 2\n" * (i % 5 + 1) + f"# {i}\n" * (i % 4),
                               metrics={"combined_score": (i * 13 % 7) / 7}), iteration=i, target_island=i % 2)
                db.increment_island_generation(island_idx=i % 2)
                if db.should_migrate():
                    db.migrate_programs()
        return _draws(db, 8) + [sorted(db.programs), [list(i) for i in db.islands], list(db.archive)]

    assert more(back) == more(live)


def test_checkpoint_links_unchanged_program_files_and_writes_changed_ones(tmp_path: Path) -> None:
    """A checkpoint written with ``link_from`` hard-links the files of programs whose JSON is the same
    as in the previous checkpoint, writes the others, and loads back to the same database."""
    import json

    db = OrderedProgramDatabase(_config(), name="p", seed=3)
    _fill(db, 12, list(range(12)))
    first = db.snapshot()
    first.save(str(tmp_path / "c1"), 1)
    assert not any(f.stat().st_nlink > 1 for f in (tmp_path / "c1" / "programs").iterdir())  # nothing to link
    changed = sorted(db.programs)[0]
    db.programs[changed].metrics = {"combined_score": 0.99}  # same id, other content
    _fill(db, 2, [12, 13])  # two programs more
    second = db.snapshot()
    second.link_from = (str(tmp_path / "c1" / "programs"), first.saved_texts)
    second.save(str(tmp_path / "c2"), 2)
    progs = tmp_path / "c2" / "programs"
    linked = {f.stem for f in progs.iterdir() if f.stat().st_nlink == 2}
    assert changed not in linked and "p012" not in linked and "p013" not in linked
    same = {k for k, text in first.saved_texts.items() if second.saved_texts.get(k) == text}
    assert linked == same and len(same) >= 5  # (admissions may also touch other programs' fields)
    for f in progs.iterdir():  # every file, linked or written, holds what this checkpoint says
        assert f.read_text() == second.saved_texts[f.stem]
    assert json.loads((progs / f"{changed}.json").read_text())["metrics"] == {"combined_score": 0.99}
    back = OrderedProgramDatabase(_config(), name="p", seed=3)
    back.load(str(tmp_path / "c2"))
    assert {k: p.to_dict() for k, p in back.programs.items()} == {k: p.to_dict() for k, p in db.programs.items()}
