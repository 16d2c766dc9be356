"""The run store: one run = one folder, append-only, resumable.

    RUN/config.json     ``identity`` (what the run is: checked on resume) + the record of how it ran
    RUN/samples.jsonl   one row per chain, appended in batches (fsync'ed every few seconds and at the end)
    RUN/results.json    metrics with standard errors (rewritten from samples at the end)

A crash can only ever cut the last line of samples.jsonl; on resume that partial line is truncated
away, every complete row is kept, and only the missing chains are generated again. Rows are keyed by
(problem_id, chain_index); if a key appears twice (``--retry-errors``) the later row wins.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from vpo_harness.harness.core.config import NOT_IDENTITY, canonical_identity
from vpo_harness.harness.core.config_schema import check_config
from vpo_harness.harness.core.rows import check_row

CONFIG, SAMPLES, RESULTS, LOCK = "config.json", "samples.jsonl", "results.json", ".lock"
#: results.json field: the size of samples.jsonl the metrics were computed from (stale when it differs)
SAMPLES_BYTES = "samples_bytes"

#: the config.json section that identifies a run; every other key may differ on resume
IDENTITY = "identity"


class RunStoreError(RuntimeError):
    pass


#: how the harness begins every config.json it writes (``{"format": N, ...}``, the layout version
#: first): the run marker's text, so a run whose config.json was cut by a crash is still a run
_MARKER_HEAD = re.compile(rb'\A\s*\{\s*"format"\s*:\s*\d')
#: per config.json (path, size, mtime): whether it is a run marker; a scan of many folders reads each once
_MARKER_CACHE: dict[tuple[str, int, int], bool] = {}


def is_run_folder(folder: str | Path) -> bool:
    """Whether ``folder`` holds a run of the harness: its config.json is the harness's own record
    (a ``format`` layout version or an ``identity`` section, as `vpo run` and `vpo evolve` write it,
    or the flat record of older versions: ``task`` and ``model`` at the top level), or a record the
    harness began writing (its ``format`` key first) that a crash cut. Why: a model checkpoint has a
    ``config.json`` too (a TRL run, a zoo policy), and listing every such folder as a run filled the
    index with "? / ?x1 / partial" rows."""
    path = Path(folder) / CONFIG
    try:
        st = path.stat()
    except OSError:
        return False
    key = (str(path), st.st_size, st.st_mtime_ns)
    hit = _MARKER_CACHE.get(key)
    if hit is None:
        hit = _MARKER_CACHE[key] = _is_run_record(path)
    return hit


def _is_run_record(path: Path) -> bool:
    try:
        data = path.read_bytes()
    except OSError:
        return False
    try:
        record = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        # cut or damaged: a run when the harness began it (its format key first) or wrote rows beside it
        return bool(_MARKER_HEAD.match(data)) or any((path.parent / f).is_file() for f in (SAMPLES, RESULTS))
    if not isinstance(record, dict):
        return False
    if isinstance(record.get("format"), int) or isinstance(record.get("identity"), dict):
        return True  # one of the two is enough: a hand-edited record is listed, damaged, with its reason
    # the flat layout of older versions (no identity section, no format): the task by name at the top,
    # which a model's config.json (architectures, model_type) never has
    return ("format" not in record and isinstance(record.get("task"), str)
            and not ({"architectures", "model_type"} & set(record)))


#: config.json is rewritten whole; events may come from a dispatch thread while the main one records
_EVENT_LOCK = threading.Lock()


def _json_default(o: Any) -> Any:
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating, np.integer, np.bool_)):
        return o.item()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dumps(obj: Any) -> str:
    """One JSON line, UTF-8 safe: text a server sent with lone surrogates (``"\\ud800"``) cannot be
    encoded as UTF-8, so such a value is written with ``\\u`` escapes instead (json reads it back
    exactly); everything else keeps readable non-ASCII."""
    text = json.dumps(obj, default=_json_default, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, default=_json_default, ensure_ascii=True)
    return text


def _io_error(path: Path, exc: OSError) -> RunStoreError:
    """An unwritable or full run folder as one line naming the file."""
    why = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
           errno.EACCES: "permission denied", errno.EPERM: "permission denied",
           errno.EROFS: "read-only file system"}.get(exc.errno or 0, exc.strerror or str(exc))
    return RunStoreError(f"{path}: cannot write ({why}); choose another --out folder or free space, "
                         "then re-run the same command to resume")


def write_json_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        text = json.dumps(obj, default=_json_default, indent=2, ensure_ascii=False)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: escape them (see dumps)
            data = json.dumps(obj, default=_json_default, indent=2, ensure_ascii=True).encode("utf-8")
        tmp.write_bytes(data + b"\n")
        os.replace(tmp, path)
    except OSError as exc:
        raise _io_error(path, exc) from exc


class RunStore:
    """Append-only writer of one run folder."""

    def __init__(self, folder: str | Path, flush_every: int = 16, fsync_interval_s: float = 2.0):
        self.folder = Path(folder)
        self.flush_every = max(1, int(flush_every))
        # write() already survives a killed process (the page cache keeps it); fsync only guards
        # against power loss, so it is paced by time instead of paid on every batch
        self.fsync_interval_s = fsync_interval_s
        self._last_fsync = 0.0
        self._buf: list[str] = []
        self._fh = None
        self._lock_fh = None

    # ---- one writer per folder --------------------------------------------------------------------
    def lock(self) -> None:
        """Take the folder's writer lock (``flock`` on RUN/.lock, released by the kernel if the process
        dies). A second ``vpo run`` on the same folder would sample every chain again; it is refused."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fh = open(self.folder / LOCK, "a+")
        except OSError as exc:
            raise _io_error(self.folder / LOCK, exc) from exc
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            fh.close()
            raise RunStoreError(f"{self.folder}: another vpo run is writing this folder ({holder}); wait for "
                                "it to finish, or use another --out folder") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()}")
        fh.flush()
        self._lock_fh = fh

    def unlock(self) -> None:
        if self._lock_fh is not None:
            fcntl.flock(self._lock_fh.fileno(), fcntl.LOCK_UN)
            self._lock_fh.close()
            self._lock_fh = None

    # ---- config -----------------------------------------------------------------------------------
    def init(self, config: dict[str, Any]) -> bool:
        """Create the folder or check it holds the same run (equal ``identity``). Returns True when resuming."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _io_error(self.folder, exc) from exc
        cfg_path = self.folder / CONFIG
        if cfg_path.exists():
            old = self.read_config()
            if IDENTITY not in old:
                raise RunStoreError(
                    f"{cfg_path}: written by an older vpo-harness (flat config without an 'identity' section); "
                    "it can still be read (vpo show, vpo plot) but not resumed: use another --out folder")
            diff, a, b = identity_diff(old[IDENTITY], config[IDENTITY])
            if diff and not self.samples_bytes():
                # nothing sampled under the old settings (a typo in --model, a server that was down):
                # the folder holds no run yet, so the corrected command starts it instead of being refused
                write_json_atomic(cfg_path, config)
                return False
            if diff:
                raise RunStoreError(f"{cfg_path}: {changed_settings(diff, a, b, self.folder)}")
            return True
        write_json_atomic(cfg_path, config)
        return False

    def read_config(self) -> dict[str, Any]:
        """config.json, its fields' types checked (:func:`vpo_harness.harness.core.config_schema.check_config`): a wrong
        type is one line naming the file and the field, not a traceback in whichever reader meets it."""
        cfg_path = self.folder / CONFIG
        try:
            record = json.loads(cfg_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunStoreError(f"{cfg_path}: line {exc.lineno}: not valid JSON ({exc.msg})") from exc
        except UnicodeDecodeError as exc:
            raise RunStoreError(f"{cfg_path}: not valid UTF-8 (byte {exc.start})") from exc
        problem = check_config(record)
        if problem:
            raise RunStoreError(f"{cfg_path}: {problem}")
        return record

    def update_record(self, **fields: Any) -> None:
        """Set top-level config.json fields outside the identity (the ks metrics are read at)."""
        cfg = self.read_config()
        if any(_canon(cfg.get(k)) != _canon(v) for k, v in fields.items()):
            cfg.update(fields)
            write_json_atomic(self.folder / CONFIG, cfg)

    def results_ks(self) -> list[int] | None:
        """The ks results.json holds best@k for (None without a readable results.json)."""
        try:
            metrics = json.loads((self.folder / RESULTS).read_text(encoding="utf-8")).get("metrics") or {}
        except (OSError, ValueError):
            return None
        return sorted(int(k[5:]) for k in metrics if k.startswith("best@") and k[5:].isdigit())

    def record_backend(self, description: dict[str, Any]) -> None:
        """Add the backend's ``describe()`` to config.json (a list: one entry per distinct backend that
        sampled into this folder). Not part of the identity: a resume may use another server."""
        cfg = self.read_config()
        seen = cfg.setdefault("backends", [])
        if not seen or _canon(seen[-1]) != _canon(description):
            seen.append(description)
            write_json_atomic(self.folder / CONFIG, cfg)

    def append_event(self, event: dict[str, Any]) -> None:
        """Add one execution event (a Ray replica lost, a replacement started) to config.json's
        ``execution.events``, stamped with the UTC time, as one atomic rewrite: a run killed right
        after still says what happened to it. Not part of the identity, so a resume keeps the list."""
        import datetime as _dt

        stamped = {"time": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), **event}
        with _EVENT_LOCK:
            cfg = self.read_config()
            ex = cfg.get("execution")
            if not isinstance(ex, dict):
                ex = cfg["execution"] = {} if ex is None else {"value": ex}
            events = ex.get("events")
            ex["events"] = (list(events) if isinstance(events, list) else []) + [stamped]
            write_json_atomic(self.folder / CONFIG, cfg)

    def events(self) -> list[dict[str, Any]]:
        """The execution events config.json records (oldest first); [] when none."""
        try:
            ex = self.read_config().get("execution")
        except OSError:
            return []
        events = ex.get("events") if isinstance(ex, dict) else None
        return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []

    # ---- samples ----------------------------------------------------------------------------------
    def repair(self) -> int:
        """Cut a partial last line left by a crash; returns the number of bytes dropped."""
        path = self.folder / SAMPLES
        if not path.exists():
            return 0
        data = path.read_bytes()
        if not data or data.endswith(b"\n"):
            return 0
        cut = data.rfind(b"\n") + 1
        with open(path, "r+b") as fh:
            fh.truncate(cut)
        return len(data) - cut

    def done_keys(self, include_errors: bool = True) -> set[tuple[str, int]]:
        keys: set[tuple[str, int]] = set()
        for row in iter_samples(self.folder / SAMPLES):
            key = (row["problem_id"], int(row["chain_index"]))
            if include_errors or not row.get("error"):
                keys.add(key)
            else:
                keys.discard(key)
        return keys

    def append(self, row: dict[str, Any]) -> None:
        self._buf.append(dumps(row) + "\n")
        if len(self._buf) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        if not self._buf:
            return
        path = self.folder / SAMPLES
        try:
            if self._fh is None:
                self._fh = open(path, "ab")
            # bytes, written whole: a full disk can cut at most this batch's last line (cut on resume)
            self._fh.write("".join(self._buf).encode("utf-8"))
            self._fh.flush()
            self._buf.clear()
            now = time.monotonic()
            if now - self._last_fsync >= self.fsync_interval_s:
                os.fsync(self._fh.fileno())
                self._last_fsync = now
        except OSError as exc:
            raise _io_error(path, exc) from exc

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._fh is not None:
                try:
                    os.fsync(self._fh.fileno())
                    self._fh.close()
                except OSError as exc:
                    raise _io_error(self.folder / SAMPLES, exc) from exc
                finally:
                    self._fh = None

    def samples_bytes(self) -> int:
        path = self.folder / SAMPLES
        return path.stat().st_size if path.exists() else 0

    def results_current(self) -> bool:
        """results.json exists and was computed from the rows now on disk (same samples.jsonl size)."""
        path = self.folder / RESULTS
        if not path.exists():
            return False
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return old.get(SAMPLES_BYTES) == self.samples_bytes()

    def invalidate_results(self) -> None:
        """Remove results.json before new rows are appended: a run killed after its last row but before
        the metrics are rewritten then has no stale metrics, and the next run recomputes them."""
        try:
            (self.folder / RESULTS).unlink(missing_ok=True)
        except OSError as exc:
            raise _io_error(self.folder / RESULTS, exc) from exc

    def write_results(self, results: dict[str, Any]) -> None:
        write_json_atomic(self.folder / RESULTS, {**results, SAMPLES_BYTES: self.samples_bytes()})


def missing_dirs(folder: str | Path) -> list[Path]:
    """``folder`` and those of its parents that do not exist yet, deepest first: what a command that
    writes ``folder`` creates, and so what :func:`discard_unstarted` may take away again."""
    out: list[Path] = []
    here = Path(folder).absolute()
    while not here.exists() and here != here.parent:
        out.append(here)
        here = here.parent
    return out


def discard_unstarted(folder: str | Path, created: list[Path], fresh: bool, extra: Sequence[str] = ()) -> bool:
    """After a command failed before its first row: remove what it wrote into a folder that held no
    run before (``fresh``: no config.json; config.json, the lock, an empty samples.jsonl), then the
    folders in ``created`` (:func:`missing_dirs`) that are left empty. Why: a mistyped model, a
    server that was down or a prompt that was too long left a folder holding only config.json and
    .lock, which every reader then listed as a run. A run that was there before the command, or
    that holds a row now, is kept. ``extra``: more names the command writes before its first row
    (`vpo evolve`: the effective OpenEvolve config, the model server's log). Returns whether the
    folder is gone."""
    folder = Path(folder)
    if not fresh or RunStore(folder).samples_bytes() > 0:
        return False
    for name in (CONFIG, LOCK, SAMPLES, RESULTS, CONFIG + ".tmp", RESULTS + ".tmp", *extra):
        try:
            (folder / name).unlink(missing_ok=True)
        except OSError:
            return False
    for d in created:  # deepest first; a folder something else wrote into stays
        try:
            d.rmdir()
        except OSError:
            break
    return not folder.exists()


def identity_diff(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """The dotted identity fields (``sampling.n``) in which two identities differ, and both flattened.
    Fields that are not identity (:data:`NOT_IDENTITY`, written by older versions) and execution-only
    model args are left out: the one comparison behind resume and behind a seed group's check."""
    # both in today's canonical form (which also drops the execution-only model args): older folders
    # (a model path where the zoo name is meant now, temperature None for the task's default) still
    # resume under the same command
    a, b = _flatten(canonical_identity(old)), _flatten(canonical_identity(new))
    for key in NOT_IDENTITY:  # written into the identity by older versions (the ks)
        a.pop(key, None)
        b.pop(key, None)
    return sorted(k for k in set(a) | set(b) if _canon(a.get(k)) != _canon(b.get(k))), a, b


#: the identity section holding the sampling settings as the task resolved them (harness.eval.runner)
RESOLVED_PREFIX = "resolved_sampling."


def _flag_value(v: Any) -> str:
    """A stored identity value as it is typed after its flag (``k=v,...`` for option maps)."""
    if isinstance(v, dict):
        return ",".join(f"{k}={_flag_value(x)}" for k, x in sorted(v.items())) or "''"
    if isinstance(v, str):
        return v if v and " " not in v else repr(v)
    return "false" if v is False else "true" if v is True else str(v)


def changed_settings(diff: list[str], old: dict[str, Any], new: dict[str, Any], folder: Path) -> str:
    """Why a folder is refused, in one line: each changed setting with the folder's value and the
    command's, the flags that resume the stored run, and how to start a new one instead."""
    from vpo_harness.harness.core.config import IDENTITY_FLAGS

    # a sampling setting appears twice (as given, and resolved to the task's default): name it once,
    # with the resolved values, which are what a flag can repeat
    shown: dict[str, tuple[Any, Any]] = {}
    for k in diff:
        name = k.replace(RESOLVED_PREFIX, "sampling.", 1)
        if k.startswith(RESOLVED_PREFIX) or name not in shown:
            shown[name] = (old.get(k), new.get(k))
    detail = "; ".join(f"{k} is {_short(a)} there, {_short(b)} now" + (f" ({IDENTITY_FLAGS[k]})" if k in IDENTITY_FLAGS else "")
                       for k, (a, b) in list(shown.items())[:5])
    more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
    flags = [f"{IDENTITY_FLAGS[k]} {_flag_value(a)}" for k, (a, _) in shown.items() if k in IDENTITY_FLAGS and a is not None]
    resume = (f"to resume it, run the command with {' '.join(flags)}" if flags and len(flags) == len(shown) else
              "to resume it, run the command that made it (its settings are in this config.json)")
    return (f"the run folder holds a different run ({detail}{more}); {resume}; to start anew, pass another "
            f"--out folder (or leave --out out) or delete {folder}")


def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=_json_default)


def _short(v: Any, limit: int = 80) -> str:
    text = repr(v)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"sampling": {"n": 4}}`` -> ``{"sampling.n": 4}`` so a mismatch names the exact field."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v and k not in ("options", "args"):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def iter_samples(path: Path) -> Iterable[dict[str, Any]]:
    """Rows of samples.jsonl; a malformed complete line is an error naming file and line.

    Read as bytes and decoded line by line: a crash can cut the last line inside a multi-byte
    character, and that partial tail must be skipped, not fail the whole file's decoding."""
    if not path.exists():
        return
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.endswith(b"\n"):
                return  # partial tail of a crashed writer: ignored here, cut by RunStore.repair
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise RunStoreError(f"{path}: line {lineno}: not valid UTF-8 (byte {exc.start})") from exc
            except json.JSONDecodeError as exc:
                raise RunStoreError(f"{path}: line {lineno}: not valid JSON ({exc.msg})") from exc
            problem = check_row(row)
            if problem:
                raise RunStoreError(f"{path}: line {lineno}: {problem}")
            yield row


def latest_rows(folder: str | Path) -> list[dict[str, Any]]:
    """One row per (problem, chain): the last one written."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for row in iter_samples(Path(folder) / SAMPLES):
        rows[(row["problem_id"], int(row["chain_index"]))] = row
    return list(rows.values())
