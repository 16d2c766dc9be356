"""Seed groups: one run per sampling seed under one parent folder.

    PARENT/seeds.json     the marker: ``{"kind": "seeds", "seeds": [0, 1, 2], "identity": {...}}``
    PARENT/seed-0/        an ordinary run folder (config.json, samples.jsonl, results.json)
    PARENT/seed-1/        ...

A run's problems all share its sampling seed, so its standard error over problems cannot see how
much the numbers move with the seed; the authors' reproduction notes average several evaluation
seeds for that reason. Each seed stays an ordinary, separately resumable run (so an interrupted
group resumes seed by seed, and a seed folder can be read alone); the marker only lists the seeds
and the identity they share less the seed, so a later ``vpo run --seed 5 --out PARENT`` can only add
a seed of the same run. Readers (``vpo_harness.harness.core.results.load_run``, ``vpo_harness.reports.pools.load_pools``)
aggregate the seeds, after :func:`group_state` checked each seed folder against the group: another
run in a seed folder is refused, a missing, empty or unfinished seed makes the group partial.

A *training-seed* group (``"kind": "training-seeds"``, written by ``vpo demo``) has the same marker
file and readers, but its members are runs of different policies, one per training seed, under the
same sampling settings and seed:

    PARENT/seeds.json     ``{"kind": "training-seeds", "seeds": [0, 1, 2], "members": {"0": "../../maze-tiny-vpo",
                          ...}, "models": {"0": "hf:maze-tiny-vpo", ...}, "identity": {... less the model}}``

The members stay where the demo wrote them (a seed-0 run is also the plain `vpo demo` run); the marker
names each one and the model it must hold, so a comparison of two groups pairs (problem, training
seed) and a run of another policy cannot pass for a member.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from vpo_harness.harness.core.store import CONFIG, RunStoreError, _short, identity_diff, write_json_atomic

MARKER = "seeds.json"
KIND = "seeds"
#: the marker kind of a group over training seeds (members are other policies' runs)
TRAINING_KIND = "training-seeds"


def seed_folder(parent: str | Path, seed: int) -> Path:
    """Where seed ``seed`` of a group lives."""
    return Path(parent) / f"seed-{int(seed)}"


def unit_label(problem_id: str, seed: int) -> str:
    """The name of one problem under one seed, where a group's problems are listed (``p3#seed-1``)."""
    return f"{problem_id}#seed-{int(seed)}"


def unit_seed(label: str) -> int:
    """The seed of a :func:`unit_label` (``p3#seed-1`` -> 1)."""
    return int(label.rsplit("#seed-", 1)[1])


def is_seed_group(path: str | Path) -> bool:
    return (Path(path) / MARKER).is_file()


def parse_seeds(text: str) -> list[int]:
    """``"0,1,2,3"`` or a range ``"0-3"`` -> [0, 1, 2, 3]; duplicates and negatives refused."""
    out: list[int] = []
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        lo, dash, hi = part.partition("-")
        try:
            vals = list(range(int(lo), int(hi) + 1)) if dash and lo else [int(part)]
        except ValueError:
            raise ValueError(f"--seeds: expected comma-separated integers or a range like 0-3, got {text!r}") from None
        out += vals
    if not out:
        raise ValueError(f"--seeds: no seed given in {text!r}")
    if any(s < 0 for s in out):
        raise ValueError(f"--seeds: seeds must be >= 0, got {text!r}")
    dup = sorted({s for s in out if out.count(s) > 1})
    if dup:
        raise ValueError(f"--seeds: seed {dup[0]} is listed twice in {text!r}")
    return out


def read_marker(parent: str | Path) -> dict[str, Any]:
    """The marker, checked: one line naming the file and field when it is damaged."""
    path = Path(parent) / MARKER
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunStoreError(f"{path}: not a readable seed-group marker ({exc})") from None
    if not isinstance(d, dict) or d.get("kind") not in (KIND, TRAINING_KIND):
        raise RunStoreError(f"{path}: field 'kind': expected {KIND!r} or {TRAINING_KIND!r}, "
                            f"got {d.get('kind') if isinstance(d, dict) else d!r}")
    seeds = d.get("seeds")
    if not isinstance(seeds, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise RunStoreError(f"{path}: field 'seeds': expected a list of integers, got {seeds!r}")
    if not isinstance(d.get("identity", {}), dict):
        raise RunStoreError(f"{path}: field 'identity': expected an object, got {d.get('identity')!r}")
    if d["kind"] == TRAINING_KIND:
        for name in ("members", "models"):
            val = d.get(name)
            if not isinstance(val, dict) or any(not isinstance(val.get(str(s)), str) for s in seeds):
                raise RunStoreError(f"{path}: field {name!r}: expected an object giving a string for every seed "
                                    f"{seeds}, got {val!r}")
    return d


def register_training_seeds(parent: str | Path, members: dict[int, Path], models: dict[int, str],
                            shared: dict[str, Any]) -> None:
    """Write the marker of a training-seed group: ``members`` (training seed -> run folder),
    ``models`` (training seed -> the model spec its run must hold), ``shared``: the identity every
    member has less its model section. The marker is rewritten each time (the caller decides the
    members); refused when ``parent`` is a run folder or a sampling-seed group."""
    import os

    parent = Path(parent)
    if (parent / CONFIG).is_file():
        raise RunStoreError(f"{parent}: is a single run folder (it has {CONFIG}); a training-seed group needs its own folder")
    if is_seed_group(parent) and read_marker(parent)["kind"] != TRAINING_KIND:
        raise RunStoreError(f"{parent / MARKER}: is a `vpo run --seeds` group over sampling seeds; use another folder")
    parent.mkdir(parents=True, exist_ok=True)
    seeds = sorted(int(s) for s in members)
    rel = {str(s): os.path.relpath(Path(members[s]).resolve(), parent.resolve()) for s in seeds}
    write_json_atomic(parent / MARKER, {"kind": TRAINING_KIND, "seeds": seeds, "members": rel,
                                        "models": {str(s): models[s] for s in seeds}, "identity": less_model(shared)})


def less_model(ident: dict[str, Any]) -> dict[str, Any]:
    """An identity less what names the policy: what the members of a training-seed group share."""
    return {k: v for k, v in ident.items() if k not in ("model", "model_fingerprint")}


def register_seeds(parent: str | Path, seeds: Sequence[int], shared: dict[str, Any]) -> None:
    """Create the group, or add ``seeds`` to it after checking it holds the same run less the seed
    (``shared``: ``RunConfig.identity(seed=False)``).

    Refused (one line naming the differing fields) when the parent already groups another run, or
    when it is itself a run folder."""
    parent = Path(parent)
    if (parent / CONFIG).is_file():
        raise RunStoreError(f"{parent}: is a single run folder (it has {CONFIG}); give --seeds runs their own --out "
                            "folder, which will hold one run per seed")
    grouped = is_seed_group(parent)
    if grouped:
        marker = read_marker(parent)
        if marker["kind"] == TRAINING_KIND:
            raise RunStoreError(f"{parent / MARKER}: is a training-seed group (written by `vpo demo`), whose members are "
                                "other policies' runs; a sampling seed cannot be added to it: use another --out folder")
        diff, a, b = identity_diff(marker.get("identity") or {}, shared)
        if diff:
            detail = "; ".join(f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in diff[:5])
            raise RunStoreError(f"{parent / MARKER}: the seed group holds another run (fields {', '.join(diff)} "
                                f"differ: {detail}); use another --out folder, or the same settings with other seeds")
        known = list(marker["seeds"])
    else:
        known = []
    merged = known + [int(s) for s in seeds if int(s) not in known]
    if merged != known or not grouped:
        parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(parent / MARKER, {"kind": KIND, "seeds": merged, "identity": shared})


@dataclass(frozen=True)
class GroupState:
    """A seed group as read: the seeds that have a run (checked to be seeds of this group) and those
    that make it partial. Why: readers averaged whatever folders were there, so a missing seed gave
    "(2 seeds)" with no word that a third was asked for, and another run dropped in as a seed folder
    was averaged in as if it were one."""

    parent: Path
    #: every seed the marker lists
    seeds: list[int]
    #: (seed, folder) of the seeds with a run folder, in the marker's order
    runs: list[tuple[int, Path]]
    #: seed -> why it does not count fully: "missing" (no run folder), "empty" (no rows yet),
    #: "unfinished" (no current results.json: still running, or interrupted)
    incomplete: dict[int, str] = field(default_factory=dict)
    #: "sampling" (`vpo run --seeds`) or "training" (one policy per training seed, `vpo demo`)
    axis: str = "sampling"

    @property
    def partial(self) -> bool:
        return bool(self.incomplete)

    def label(self) -> str:
        """:func:`group_label` of the group: an empty seed has no rows to count."""
        return group_label(sum(1 for s, _ in self.runs if self.incomplete.get(s) != "empty"), self.seeds,
                           self.incomplete, self.axis)


def group_label(n_read: int, seeds: Sequence[int], incomplete: dict[Any, str], axis: str = "sampling") -> str:
    """How every reader names a group's seeds: ``3 seeds``, or ``2 of 3 seeds, partial: seed 2
    missing`` (``n_read``: the seeds whose rows are counted; ``incomplete``: seed -> why); a
    training-seed group says ``3 training seeds``."""
    noun = "training seeds" if axis == "training" else "seeds"
    text = f"{n_read} {noun}" if n_read == len(seeds) else f"{n_read} of {len(seeds)} {noun}"
    if incomplete:
        text += ", partial: " + ", ".join(f"seed {s} {why}" for s, why in incomplete.items())
    return text


def member_folder(parent: str | Path, marker: dict[str, Any], seed: int) -> Path:
    """Where the run of ``seed`` lives: ``PARENT/seed-S``, or the member a training-seed marker names."""
    if marker["kind"] == TRAINING_KIND:
        # the marker stores the member relative to the group (``../../maze-tiny-vpo@1``): folded, so
        # the path names the member as a scan finds it (an unfolded one was a link that opened nothing)
        import os

        return Path(os.path.normpath(Path(parent) / marker["members"][str(seed)]))
    return seed_folder(parent, seed)


def _less_seed(ident: dict[str, Any]) -> dict[str, Any]:
    out = {k: dict(v) if isinstance(v, dict) else v for k, v in ident.items()}
    if isinstance(out.get("sampling"), dict):
        out["sampling"].pop("seed", None)
    return out


def _shared_mismatch(marker: dict[str, Any], ident: dict[str, Any], first: tuple[int, dict[str, Any]] | None,
                     strip: Any) -> tuple[str, Any, Any, int | None] | None:
    """The first identity field where a member differs from what the group shares, as (field, the
    group's value, the member's value, the seed it was checked against or None for the marker):
    checked against the marker, then against the group's first member on everything else its
    identity records (the weights digest, the problems). ``strip``: the identity less what varies
    along the group's axis."""
    shared = marker.get("identity") or {}
    diff, a, b = identity_diff(shared, {k: v for k, v in strip(ident).items() if k in shared})
    against = None
    if not diff and first is not None:
        diff, a, b = identity_diff(strip(first[1]), strip(ident))
        against = first[0]
    return (diff[0], a.get(diff[0]), b.get(diff[0]), against) if diff else None


def _foreign(parent: Path, seed: int, marker: dict[str, Any], ident: dict[str, Any],
             first: tuple[int, dict[str, Any]] | None) -> str | None:
    """Why the folder of ``seed`` is not a run of this group (one line naming the folder and the
    field), or None. A sampling-seed folder must hold its own seed; a training-seed member must hold
    the model the marker names for its seed. Both must share everything else with the group
    (:func:`_shared_mismatch`), so runs of other weights under one model name cannot mix either."""
    folder = member_folder(parent, marker, seed)
    training = marker["kind"] == TRAINING_KIND
    if training:
        want, got = marker["models"][str(seed)], (ident.get("model") or {}).get("spec")
        if got != want:
            return (f"{folder}: not training seed {seed} of the group {parent}: field identity.model.spec is "
                    f"{_short(got)}, the group's marker names {_short(want)}")
    else:
        got = (ident.get("sampling") or {}).get("seed")
        if got != seed:
            return f"{folder}: not seed {seed} of the group {parent}: field identity.sampling.seed is {got!r}"
    bad = _shared_mismatch(marker, ident, first, less_model if training else _less_seed)
    if bad is None:
        return None
    k, theirs, mine, against = bad
    noun = "training seed" if training else "seed"
    other = "the group's marker" if against is None else f"{noun} {against}"
    what = "a member of the training-seed group" if training else "a seed of the group"
    fix = ("re-run `vpo demo` with the group's settings" if training
           else "move the folder out, or re-run that seed with the group's settings")
    return (f"{folder}: not {what} {parent}: field identity.{k} is {_short(mine)}, {other} has {_short(theirs)} "
            f"({fix})")


def group_state(parent: str | Path) -> GroupState:
    """The group checked as read (see :class:`GroupState`): a seed folder holding another run is a
    :class:`RunStoreError` naming the folder and the field; a group none of whose seeds has started
    is one too."""
    from vpo_harness.harness.core.store import RunStore

    parent = Path(parent)
    marker = read_marker(parent)
    runs: list[tuple[int, Path]] = []
    incomplete: dict[int, str] = {}
    first: tuple[int, dict[str, Any]] | None = None
    training = marker["kind"] == TRAINING_KIND
    for seed in marker["seeds"]:
        folder = member_folder(parent, marker, seed)
        if not (folder / CONFIG).is_file():
            incomplete[seed] = "missing"
            continue
        store = RunStore(folder)
        ident = store.read_config().get("identity")
        if not isinstance(ident, dict):
            raise RunStoreError(f"{folder / CONFIG}: field 'identity': missing, so it cannot be a seed of {parent}")
        problem = _foreign(parent, seed, marker, ident, first)
        if problem:
            raise RunStoreError(problem)
        first = first or (seed, ident)
        runs.append((seed, folder))
        if store.samples_bytes() == 0:
            incomplete[seed] = "empty"
        elif not store.results_current():
            incomplete[seed] = "unfinished"
    if not runs:
        again = "`vpo demo --seeds` command" if training else "`vpo run --seeds` command"
        raise RunStoreError(f"{parent}: seed group with seeds {marker['seeds']} but no seed folder holds a run yet "
                            f"(re-run the {again} to start them)")
    return GroupState(parent, list(marker["seeds"]), runs, incomplete, "training" if training else "sampling")


def seed_runs(parent: str | Path) -> list[tuple[int, Path]]:
    """(seed, folder) of every seed of the group that has a run folder yet, in the marker's order,
    each checked to be a seed of the group (:func:`group_state`)."""
    return group_state(parent).runs


def representative(path: str | Path) -> Path:
    """The folder whose config.json describes ``path``: the first seed of a group, else ``path``."""
    return seed_runs(path)[0][1] if is_seed_group(path) else Path(path)
