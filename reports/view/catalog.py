"""Find run folders under the given directories and summarise each for the index page.

A run folder is a folder whose ``config.json`` is the harness's own record
(``vpo_harness.harness.core.store.is_run_folder``; a model checkpoint's ``config.json`` is not one;
an evolve run's ``baseline/`` is a run too). The
summary comes from ``vpo_harness.harness.core.results`` (results.json when current, the stored rows otherwise) and is
cached per folder until one of its files changes, so reloading the index of many runs is cheap.
A folder that cannot be read becomes one entry with ``status: damaged`` and the reason in one line.
A seed group (``seeds.json``: one run per sampling seed, vpo_harness.harness.core.seed_groups) is a row of its own, its
metrics the seeds' combined by ``vpo_harness.harness.core.results`` (mean over seeds, within-run and
between-seed standard errors), next to the rows of its seeds.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from vpo_harness.harness.core.config import recorded_ks
from vpo_harness.harness.core.metrics import Estimate, mean_se
from vpo_harness.harness.core.results import RunResults, read_results, results_at
from vpo_harness.harness.core.seed_groups import (MARKER, group_state, is_seed_group, member_folder, read_marker,
                                                 seed_runs)
from vpo_harness.harness.core.store import (CONFIG, RESULTS, SAMPLES, SAMPLES_BYTES, RunStore, RunStoreError,
                                           is_run_folder)
from vpo_harness.reports.colours import StyleBook
from vpo_harness.reports.constant_metrics import constant_metrics
from vpo_harness.reports.tables import format_estimate
from vpo_harness.reports.view.samples import SampleIndex

#: folders never searched for runs: OpenEvolve's checkpoints, caches, hidden folders
_SKIP = {"openevolve", "__pycache__", "node_modules"}


@dataclass
class RunEntry:
    """One run folder as the index shows it; ``row`` is the JSON the browser gets."""

    id: str
    path: Path
    row: dict[str, Any]
    config: dict[str, Any] = field(default_factory=dict, repr=False)
    results: RunResults | None = field(default=None, repr=False)

    @property
    def kind(self) -> str:
        return self.row.get("kind", "eval")


def display_name(folder: Path, roots: Iterable[Path]) -> str:
    """The folder relative to the root it was found under (the root's own name when it is the run)."""
    for root in roots:
        try:
            rel = folder.relative_to(root)
        except ValueError:
            continue
        return str(rel) if str(rel) != "." else (root.name or str(root))
    return str(folder)


def find_run_folders(roots: Iterable[str | Path]) -> list[Path]:
    """Every run folder (:func:`is_run_folder`) and seed group under ``roots`` (a root may itself be
    one), sorted, no repeats, less the groups of one member found beside that member (a plain
    `vpo demo` writes one such group per method; listing it too showed every method twice)."""
    seen: dict[str, Path] = {}
    groups: dict[str, Path] = {}
    for root in roots:
        root = Path(root)
        for dirpath, _, filenames in _walk(root):
            if MARKER in filenames:
                groups.setdefault(os.path.realpath(dirpath), Path(dirpath))
            elif CONFIG in filenames and is_run_folder(dirpath):
                seen.setdefault(os.path.realpath(dirpath), Path(dirpath))
    for real, folder in groups.items():
        if not _lone_member_listed(folder, seen):
            seen.setdefault(real, folder)
    return sorted(seen.values(), key=lambda p: str(p))


def _walk(root: Path) -> Iterable[tuple[str, list[str], list[str]]]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP and not d.startswith("."))
        yield dirpath, dirnames, filenames


def _lone_member_listed(group: Path, listed: dict[str, Path]) -> bool:
    """Whether ``group`` lists one seed whose run folder is among ``listed`` (realpath -> folder)."""
    try:
        marker = read_marker(group)
    except (RunStoreError, OSError):
        return False  # a damaged marker is listed: its row says what is wrong
    if len(marker["seeds"]) != 1:
        return False
    return os.path.realpath(member_folder(group, marker, marker["seeds"][0])) in listed


def _stamp(folder: Path) -> tuple:
    """What a cached summary depends on: the three files' sizes and modification times (a seed
    group's: its marker's and every seed folder's)."""
    if (folder / MARKER).is_file():
        try:
            seeds = [f for _, f in seed_runs(folder)]
        except (RunStoreError, OSError):
            seeds = []
        return (_file_stamp(folder / MARKER), *(_stamp(f) for f in seeds))
    return tuple(_file_stamp(folder / name) for name in (CONFIG, RESULTS, SAMPLES))


def _file_stamp(path: Path) -> tuple | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _est(e: Estimate | None) -> dict[str, float] | None:
    if e is None or not e.defined:
        return None
    se = e.stderr if math.isfinite(e.stderr) else None
    out = {"mean": e.mean, "stderr": se, "n": e.n}
    if e.n_seeds > 1:  # a seed group: the between-seed standard error too
        out.update(seed_stderr=e.seed_stderr if e.seed_stderr is not None and math.isfinite(e.seed_stderr) else None,
                   n_seeds=e.n_seeds)
    out["text"] = format_estimate(e)  # the page writes the cell `vpo show` writes (reports.tables)
    return out


def model_label(spec: str) -> str:
    """A model spec as the index names it: a policy given by an absolute path (``hf:/home/u/trl/out/
    checkpoint-500``) by its last two folders (``hf:.../out/checkpoint-500``), which tell runs apart
    without a path filling the column; the full spec stays in the row's ``model_spec``."""
    backend, colon, rest = spec.partition(":")
    if not colon or not rest.startswith("/"):
        return spec
    parts = Path(rest).parts
    return spec if len(parts) <= 3 else f"{backend}:.../{'/'.join(parts[-2:])}"


def _section(record: dict[str, Any], key: str) -> dict[str, Any]:
    """``record[key]`` when it is an object, else {}: a config written by another version (or damaged)
    may lack a section or hold something else there, and the catalogue shows what it can."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def reward_mode(config: dict[str, Any]) -> str:
    """The task options that shape the reward (``reward_mode`` where the task has one), as one string."""
    ident = _section(config, "identity")
    opts: dict[str, Any] = {}
    for section in (ident.get("task_info"), ident.get("task")):
        o = section.get("options") if isinstance(section, dict) else None
        opts.update(o if isinstance(o, dict) else {})
    if "reward_mode" in opts:
        return str(opts["reward_mode"])
    return ",".join(f"{k}={v}" for k, v in sorted(opts.items())) or "default"


def _created(config: dict[str, Any], folder: Path) -> str:
    c = config.get("created")
    if isinstance(c, str) and c:
        return c
    try:
        t = (folder / CONFIG).stat().st_mtime
    except OSError:
        return ""
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(timespec="seconds")


def partial_metrics(config: dict[str, Any], ix: SampleIndex) -> tuple[dict[str, Any], int, int, list[int]]:
    """Headline metrics of a run without current results.json, over the rows stored so far: the
    per-problem values of the sample index averaged over problems (mean +- s.e., as results.json).
    Returns (metrics, candidates, chains, ks). Cheap on a run still writing: the index reads only
    the bytes appended since the last look."""
    ident = _section(config, "identity")
    samp = _section(ident, "sampling")
    pool = int(samp.get("n") or 1) * int(samp.get("m") or 1)
    ks = [k for k in recorded_ks(config) if 1 <= k <= pool] or [1]
    stats = ix.problem_stats(ks)
    per = [st for st in stats.values() if st["candidates"]]
    m: dict[str, Any] = {}
    for k in ks:
        m[f"best@{k}"] = _est(mean_se(st[f"best@{k}"] for st in per))
        m[f"pass@{k}"] = _est(mean_se(st[f"pass@{k}"] for st in per))
    m["mean_scalar"] = _est(mean_se(st["mean"] for st in per))
    m["diversity"] = _est(mean_se(st["diversity"] if st["diversity"] is not None else float("nan") for st in per))
    return ({k: v for k, v in m.items() if v is not None}, sum(st["candidates"] for st in stats.values()),
            len(ix.rows), ks)


def summarise(folder: Path, run_id: str, ix: SampleIndex | None = None) -> RunEntry:
    """The index row of one folder; never raises for a damaged folder (its row says what is wrong).
    ``ix`` (the folder's sample index) gives a partial run its metrics over the rows stored so far."""
    try:
        if is_seed_group(folder):
            return _summarise_group(folder, run_id)
        return _summarise(folder, run_id, ix)
    except Exception as exc:  # a config.json of the wrong shape (hand-edited): one line, the index goes on
        row = {"id": run_id, "path": str(folder), "status": "damaged", "kind": "eval", "task": "?", "split": "?",
               "model": "?", "pool": "?", "reward_mode": "?", "created": "", "metrics": {},
               "note": f"{folder / CONFIG}: unexpected content ({type(exc).__name__}: {exc})".splitlines()[0][:300]}
        return RunEntry(run_id, folder, row)


def _summarise(folder: Path, run_id: str, ix: SampleIndex | None) -> RunEntry:
    row: dict[str, Any] = {"id": run_id, "path": str(folder), "status": "damaged", "note": None,
                           "kind": "eval", "task": "?", "split": "?", "model": "?", "pool": "?",
                           "reward_mode": "?", "created": "", "metrics": {}}
    try:
        config = RunStore(folder).read_config()
    except (RunStoreError, OSError, UnicodeDecodeError) as exc:
        row["note"] = str(exc)
        return RunEntry(run_id, folder, row)
    if not isinstance(config, dict):
        row["note"] = f"{folder / CONFIG}: not a JSON object"
        return RunEntry(run_id, folder, row)
    ident = _section(config, "identity")
    task, model, samp = (_section(ident, k) for k in ("task", "model", "sampling"))
    row.update(kind="evolve" if config.get("kind") == "evolve" else "eval",
               task=str(task.get("name") or config.get("task") or "?"),
               split=str(task.get("split") or config.get("split") or "?"),
               model=model_label(str(model.get("spec") or config.get("model") or "?")),
               model_spec=str(model.get("spec") or config.get("model") or "?"),
               pool=f"{samp.get('n', config.get('n', '?'))}x{samp.get('m', config.get('m', 1))}",
               reward_mode=reward_mode(config), created=_created(config, folder),
               n_problems=int((ident.get("problems") or {}).get("n") or 0))
    res: RunResults | None = None
    ix = ix if ix is not None else SampleIndex(folder / SAMPLES)
    try:
        res = read_results(folder)
        store = RunStore(folder)
        if res is not None and res.raw.get(SAMPLES_BYTES, store.samples_bytes()) == store.samples_bytes():
            row["status"] = "complete"
        else:
            why = "no results.json (running or interrupted)" if res is None else "results.json older than samples.jsonl"
            row["status"], row["note"] = "partial", why
            metrics, n_cand, n_chains, ks = partial_metrics(config, ix.refresh())
            row.update(metrics=metrics, n_candidates=n_cand, n_chains=n_chains, ks=ks,
                       n_errors=sum(m.error for m in ix.rows))
            if ix.warnings:
                row["status"], row["note"] = "damaged", ix.warnings[0] + (
                    f" (and {ix.n_damaged - 1} more)" if ix.n_damaged > 1 else "")
    except (RunStoreError, OSError, ValueError, KeyError, TypeError) as exc:
        row["status"], row["note"] = "damaged", str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if res is not None and row["status"] == "complete":
        row["pool"] = res.pool_shape if res.n else row["pool"]
        row["n_problems"] = res.n_problems or row["n_problems"]
        m: dict[str, Any] = {f"best@{k}": _est(e) for k, e in res.best.items()}
        m.update({f"pass@{k}": _est(e) for k, e in res.pass_at.items()})
        m.update({name: _est(e) for name, e in res.summary.items()})
        solved = (res.raw.get("evolve") or {}).get("solved") if row["kind"] == "evolve" else None
        if isinstance(solved, dict):
            m["solved"] = _est(Estimate.from_dict(solved))
        row["metrics"] = {k: v for k, v in m.items() if v is not None}
        row.update(n_candidates=res.n_candidates, n_chains=res.n_chains, n_errors=res.n_errors,
                   ks=res.ks, components=res.components)
    return RunEntry(run_id, folder, row, config, res)


def group_info(parent: Path) -> dict[str, Any]:
    """What the index says about the seed group a run folder belongs to: its seeds as read
    (``2 of 3 seeds, partial: seed 2 missing``) and whether it is partial, or the one line that
    refuses it (a seed folder of another run), as `vpo show` reads the group."""
    try:
        state = group_state(parent)
    except (RunStoreError, OSError) as exc:
        return {"id": str(parent), "name": parent.name, "label": str(exc).splitlines()[0], "partial": True,
                "refused": True}
    return {"id": str(parent), "name": parent.name, "label": state.label(), "partial": state.partial, "refused": False}


def _summarise_group(folder: Path, run_id: str) -> RunEntry:
    """A seed group's row: the first seed's settings, the seeds' metrics combined
    (``vpo_harness.harness.core.results.results_at``, which counts a seed still running with its rows so far);
    partial while a seed is (the aggregate's ``partial``), or while a seed the group lists has no
    folder yet."""
    state = group_state(folder)
    seeds = state.runs
    first = summarise(seeds[0][1], str(seeds[0][1]))
    row = {**first.row, "id": run_id, "path": str(folder), "kind": "seeds", "note": None, "seed_axis": state.axis,
           "seeds": [s for s, _ in seeds], "seed_runs": [str(f) for _, f in seeds]}
    if state.axis == "training":  # one policy per training seed: the group names them all, not seed 0's
        specs = list(dict.fromkeys(str(read_marker(folder)["models"][str(s)]) for s, _ in seeds))
        row.update(model=", ".join(model_label(m) for m in specs), model_spec=", ".join(specs))
    res = results_at(folder)
    if res is None:
        row.update(status="partial", note="no seed has rows yet", metrics={})
        return RunEntry(run_id, folder, row, first.config, None)
    running = sum(1 for r in (res.raw.get("per_seed") or {}).values() if isinstance(r, dict) and r.get("partial"))
    missing = len(state.seeds) - len(seeds)
    partial = bool(res.raw.get("partial")) or missing > 0
    m: dict[str, Any] = {f"best@{k}": _est(e) for k, e in res.best.items()}
    m.update({f"pass@{k}": _est(e) for k, e in res.pass_at.items()})
    m.update({name: _est(e) for name, e in res.summary.items()})
    row.update(status="partial" if partial else "complete", metrics={k: v for k, v in m.items() if v is not None},
               pool=res.pool_shape if res.n else row.get("pool"), n_candidates=res.n_candidates,
               n_chains=res.n_chains, n_errors=res.n_errors, ks=res.ks, components=res.components,
               note="; ".join(n for n in (f"{running} of {len(seeds)} seeds still running or interrupted" if running else "",
                                          f"{missing} seed{'s' if missing > 1 else ''} not started" if missing > 0 else "") if n)
               or None)
    return RunEntry(run_id, folder, row, first.config, res)


def drop_constant(row: dict[str, Any]) -> None:
    """Leave out of a row's metrics those its task makes 0 by construction (Maze: pass@k; the rule of
    `vpo show` and `vpo compare`, reports/constant_metrics.py); ``row["dropped"]`` says which and why."""
    constant = constant_metrics([row.get("task")]) if row.get("task") not in (None, "?") else None
    metrics = row.get("metrics") or {}
    if constant is not None:
        row["metrics"] = {k: v for k, v in metrics.items() if not constant.drops(k)}
        row["dropped"] = constant.note()


class Catalog:
    """The run folders under some roots, rescanned on every :meth:`entries` call (new runs appear on
    reload), each summary recomputed only when its files changed."""

    def __init__(self, roots: Iterable[str | Path], all_metrics: bool = False):
        self.roots = [Path(r) for r in roots]
        #: keep the metrics a task makes 0 by construction (`vpo view --all-metrics`)
        self.all_metrics = all_metrics
        self._cache: dict[str, tuple[tuple, RunEntry]] = {}
        self._indexes: dict[str, SampleIndex] = {}
        #: one style per run for the session: a run keeps its colour as folders are added
        self.styles = StyleBook()

    def _index(self, run_id: str, folder: Path) -> SampleIndex:
        ix = self._indexes.get(run_id)
        if ix is None:
            ix = self._indexes[run_id] = SampleIndex(folder / SAMPLES)
        return ix

    def index_of(self, run_id: str, folder: Path) -> SampleIndex:
        """The folder's sample index, kept across requests (refreshed: it reads only new bytes)."""
        return self._index(run_id, folder).refresh()

    def entries(self) -> list[RunEntry]:
        out = []
        groups: dict[Path, dict[str, Any]] = {}  # each seed group read once per scan
        folders = find_run_folders(self.roots)
        listed = {str(f) for f in folders}
        for folder in folders:
            run_id = str(folder)
            stamp = _stamp(folder)
            hit = self._cache.get(run_id)
            if hit is None or hit[0] != stamp:
                # a complete run's summary never reads samples.jsonl; a partial one refreshes the index
                hit = (stamp, summarise(folder, run_id, self._index(run_id, folder)))
                row = hit[1].row
                row["name"] = display_name(folder, self.roots)
                # the index names the folder once; its notes need not repeat it
                row["short_note"] = row["note"].replace(f"{folder}{os.sep}", "") if row.get("note") else None
                if not self.all_metrics:
                    drop_constant(row)
                self._cache[run_id] = hit
            hit[1].row.pop("group", None)
            if is_seed_group(folder.parent):  # read on every scan: a sibling seed may have changed
                if folder.parent not in groups:
                    groups[folder.parent] = group_info(folder.parent)
                hit[1].row["group"] = groups[folder.parent]
            out.append(hit[1])
        # a training-seed group's members live outside it (the demo's runs): each names its group too
        members = {os.path.realpath(f): e.path for e in out if e.row.get("seed_axis") == "training"
                   for f in e.row.get("seed_runs") or []}
        for e in out:
            parent = members.get(os.path.realpath(e.path))
            if parent is not None and "group" not in e.row:
                groups.setdefault(parent, group_info(parent))
                e.row["group"] = groups[parent]
        for info in groups.values():  # a link only to a group the index lists (a lone member's is not)
            info["listed"] = info["id"] in listed
        # runs new to this session take their styles oldest first, so a later scan (and the next
        # session, when the new folders are newer) gives the runs already seen the styles they had
        for e in sorted(out, key=lambda e: (e.row.get("created") or "", e.id)):
            style = self.styles.style(e.id)
            e.row["colour"], e.row["dash"] = style.colour, style.svg_dash
        return out

    def get(self, run_id: str) -> RunEntry | None:
        """A run by id; only folders found by the scan are reachable (ids are never used as paths)."""
        hit = self._cache.get(run_id)
        if hit is not None and hit[0] == _stamp(hit[1].path):
            return hit[1]
        for e in self.entries():
            if e.id == run_id:
                return e
        return None


    def find(self, folder: Path) -> RunEntry | None:
        """The listed run held in ``folder`` (compared by real path: a group names its members by
        paths that need not be spelt as the scan found them), or None."""
        real = os.path.realpath(folder)
        hit = self._cache.get(str(folder))
        if hit is not None and os.path.realpath(hit[1].path) == real:
            return self.get(str(folder))
        return next((e for e in self.entries() if os.path.realpath(e.path) == real), None)


def to_json_text(obj: Any) -> str:
    """JSON for the browser: ASCII only (a lone surrogate becomes a ``\\ud800`` escape, never a
    broken byte), NaN and infinities as null (JSON has neither)."""
    return json.dumps(_finite(obj), ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def _finite(o: Any) -> Any:
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {str(k): _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    if hasattr(o, "item") and callable(o.item):  # numpy scalars
        return _finite(o.item())
    return o
