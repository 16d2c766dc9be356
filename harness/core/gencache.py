"""The generation cache: a chain sampled once is not sampled again by a later command that needs
exactly the same chain.

A chain is reused only when everything that determines its text is equal, so the key is a digest of
all of it: the model (its spec, the model args that identify it and the digest of every file of
the checkpoint that generation reads (for a hub id, its commit and the digest of its snapshot's
files; with ``trust_remote_code``, also of the checkpoint's Python modules), as a run's identity
records them (:func:`vpo_harness.harness.core.provenance.model_fingerprint`); and
the machine's part, the resolved device class and dtype and the backend library's versions), the prompt (the messages, the chat-template arguments and the assistant
prefix, "" when there is none), every :class:`SamplingConfig` field and the chain's seed. Any one part
differing is another key: nothing is reused. It is only sound for backends whose chain is a function
of that key (``vpo_harness.harness.core.models.deterministic``), so the runner turns it on by default for those
alone; ``--cache`` / ``--no-cache`` decide either way.

Storage, chosen for crash safety and several writers: one SQLite database in WAL mode. Every put is
one transaction, so a process killed with SIGKILL mid-write leaves an uncommitted WAL tail that the
next open discards: an entry is there whole or not at all. Writers in several processes serialise on
SQLite's write lock (``busy_timeout`` makes them wait instead of failing) and readers never block
them. One file per key written by rename would be as atomic, but a run of 100k chains would leave
100k files, and ``vpo cache`` would walk all of them to say how big the cache is; here it is one
query. WAL needs memory shared between the processes, so the cache must be on a local disk, not NFS.
Failed generations are never stored: a retry should sample again.

Damage is a miss, never a wrong row: each entry carries a checksum of its key and value, checked on
every read; an entry that fails it is removed and sampled again, with one warning naming the file.
A file whose pages are damaged makes the run sample everything and store nothing (one warning);
`vpo cache` reports such a file and `vpo cache clear` removes it.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from vpo_harness.harness.core.models.base import GenRequest, Generation, SamplingConfig

_log = logging.getLogger(__name__)  # notes and warnings: the caller decides where they go (harness/core/log.py)

#: bumped when the key or the stored value changes meaning: older entries then simply miss
CACHE_FORMAT = 2
DB_NAME = "generations.sqlite"
#: keys per ``IN (...)`` lookup (well under SQLite's bound-variable limit)
_LOOKUP_CHUNK = 500
#: how long a writer waits for another process's transaction before giving up
_BUSY_MS = 60_000
#: the Generation fields a stored entry holds: all but the chain's address, its error (failed chains
#: are never stored) and ``extra`` (stored less the cached mark). Read off the dataclass, so a field
#: added to Generation later is stored, and a cached row keeps equal to the row it replaces.
_VALUE_FIELDS = tuple(f.name for f in dataclasses.fields(Generation)
                      if f.name not in ("problem_id", "chain_index", "error", "extra"))
#: what to do about a damaged cache, said wherever one is found
REMEDY = "`vpo cache clear` empties it, --no-cache runs without it"


class CacheError(ValueError):
    """The cache file cannot be used (not a SQLite database, unwritable, damaged pages): one line naming it."""


def checksum(key: str, value: str) -> str:
    """Of an entry's key and stored text together: a flipped byte in either, or a value moved under
    another key, no longer matches. SQLite itself does not checksum its pages."""
    return hashlib.sha256(f"{key}\0{value}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _decode(key: str, value: Any, sha: Any) -> dict[str, Any] | None:
    """The stored value, or None when it does not match its checksum or is not a JSON object."""
    if not isinstance(value, str) or sha != checksum(key, value):
        return None
    try:
        out = json.loads(value)
    except ValueError:
        return None
    return out if isinstance(out, dict) else None


def chain_key(model: Mapping[str, Any], messages: Sequence[Mapping[str, str]], sampling: SamplingConfig,
              seed: int, prefix: str = "") -> str:
    """sha256 of everything that determines a chain's text (see the module docstring).

    Every field of ``sampling`` is part of it, so a field added to :class:`SamplingConfig` later joins
    the key without an edit here; float fields are compared as floats (``temperature=1`` is 1.0)."""
    samp: dict[str, Any] = {}
    for f in dataclasses.fields(sampling):
        v = getattr(sampling, f.name)
        if isinstance(f.default, float) and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        samp[f.name] = v
    template = samp.pop("chat_template_args", ())
    payload = {
        "format": CACHE_FORMAT,
        "model": dict(model),
        "prompt": {"messages": [dict(m) for m in messages], "chat_template_args": template, "prefix": prefix},
        "sampling": samp,
        "seed": int(seed),
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


@dataclass
class CacheStats:
    """What ``vpo cache`` prints: where, how many chains, how many bytes (stored text and on disk),
    and how many entries fail their checksum."""

    path: Path
    entries: int
    payload_bytes: int
    disk_bytes: int
    #: model spec -> (entries, payload bytes), largest first
    models: dict[str, tuple[int, int]] = field(default_factory=dict)
    damaged: int = 0


class GenerationCache:
    """The SQLite store of generations by :func:`chain_key`. Safe to share between threads and processes."""

    def __init__(self, folder: Path | str | None = None) -> None:
        if folder is None:
            from vpo_harness.harness.core.paths import generations_dir

            folder = generations_dir()
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        self._lock = threading.Lock()
        #: entries found damaged by this process (warned about once)
        self.damaged = 0
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=_BUSY_MS / 1000, check_same_thread=False,
                                       isolation_level=None)
            self._db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
            self._db.execute("PRAGMA journal_mode = WAL")
            # WAL + NORMAL: a commit is atomic and survives a killed process; only a power loss may
            # drop the last commits, which for a cache is a miss, never a wrong entry
            self._db.execute("PRAGMA synchronous = NORMAL")
            columns = {r[1] for r in self._db.execute("PRAGMA table_info(chains)")}
            if columns and "sha" not in columns:  # entries of the format without checksums: all misses
                self._db.execute("DROP TABLE chains")
            self._db.execute("CREATE TABLE IF NOT EXISTS chains (key TEXT PRIMARY KEY, model TEXT NOT NULL, "
                             "value TEXT NOT NULL, sha TEXT NOT NULL, bytes INTEGER NOT NULL)")
        except (sqlite3.Error, OSError) as exc:
            raise self._error(exc) from None

    def _error(self, exc: BaseException) -> CacheError:
        return CacheError(f"generation cache {self.path}: {exc} ({REMEDY})")

    def get_many(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored values of those ``keys`` that are in the cache and intact. A damaged entry is a
        miss: it is removed (the chain is sampled and stored again) and counted in :attr:`damaged`,
        with one warning per process naming the file."""
        keys = list(dict.fromkeys(keys))
        out: dict[str, dict[str, Any]] = {}
        bad: list[str] = []
        with self._lock:
            try:
                for i in range(0, len(keys), _LOOKUP_CHUNK):
                    part = keys[i: i + _LOOKUP_CHUNK]
                    marks = ",".join("?" * len(part))
                    for key, value, sha in self._db.execute(
                            f"SELECT key, value, sha FROM chains WHERE key IN ({marks})", part):
                        got = _decode(key, value, sha)
                        if got is None:
                            bad.append(key)
                        else:
                            out[key] = got
                if bad:
                    self._db.executemany("DELETE FROM chains WHERE key = ?", [(k,) for k in bad])
            except sqlite3.Error as exc:
                raise self._error(exc) from None
        if bad:
            if not self.damaged:
                _log.warning(f"[vpo] warning: generation cache {self.path}: {len(bad)} damaged entries skipped (their "
                             f"chains are sampled again); {REMEDY}")
            self.damaged += len(bad)
        return out

    def put(self, key: str, model: str, value: Mapping[str, Any]) -> None:
        """Store one generation (one transaction). A key already there is kept: the first writer wins,
        and for a deterministic backend both writers hold the same text anyway."""
        text = json.dumps(dict(value), ensure_ascii=True, separators=(",", ":"))
        with self._lock:
            try:
                self._db.execute("INSERT OR IGNORE INTO chains (key, model, value, sha, bytes) VALUES (?, ?, ?, ?, ?)",
                                 (key, model, text, checksum(key, text), len(text)))
            except sqlite3.Error as exc:  # a full disk, a lock held past the timeout
                raise CacheError(f"generation cache {self.path}: {exc}") from None

    def stats(self) -> CacheStats:
        """Sizes per model, every entry's checksum verified (one pass over the file: `vpo cache` is
        where damage is looked for). Damaged pages are a :class:`CacheError`."""
        models: dict[str, list[int]] = {}
        damaged = 0
        with self._lock:
            try:
                for key, model, value, sha, size in self._db.execute("SELECT key, model, value, sha, bytes FROM chains"):
                    if _decode(key, value, sha) is None:
                        damaged += 1
                        continue
                    m = models.setdefault(str(model), [0, 0])
                    m[0] += 1
                    m[1] += int(size)
            except sqlite3.Error as exc:
                raise self._error(exc) from None
        disk = sum(p.stat().st_size for p in self.folder.glob(DB_NAME + "*") if p.is_file())
        ordered = dict(sorted(((m, (n, b)) for m, (n, b) in models.items()), key=lambda kv: -kv[1][1]))
        return CacheStats(self.path, sum(n for n, _ in ordered.values()), sum(b for _, b in ordered.values()), disk,
                          ordered, damaged)

    def clear(self, model: str | None = None) -> int:
        """Remove every entry (or those of one model spec); returns how many. The file is compacted."""
        with self._lock:
            try:
                cur = (self._db.execute("DELETE FROM chains") if model is None
                       else self._db.execute("DELETE FROM chains WHERE model = ?", (model,)))
            except sqlite3.Error as exc:
                raise self._error(exc) from None
            n = cur.rowcount
            try:
                self._db.execute("VACUUM")
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.OperationalError:  # another process is reading: the space is reused later
                pass
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "GenerationCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def remove_cache_file(folder: Path | str | None = None) -> list[Path]:
    """Delete the cache file and its WAL and shared-memory files (what `vpo cache clear` does to a
    file it cannot read); returns what it removed. A process still holding it open keeps its own
    view until it closes; the next open starts an empty cache."""
    if folder is None:
        from vpo_harness.harness.core.paths import generations_dir

        folder = generations_dir()
    gone = []
    for p in sorted(Path(folder).glob(DB_NAME + "*")):
        if p.is_file():
            p.unlink()
            gone.append(p)
    return gone


def generation_value(gen: Any) -> dict[str, Any]:
    """The stored part of a finished chain (a :class:`Generation` or a scored row: both carry these;
    a row's unset prefix is None where a Generation's is "")."""
    out = {k: getattr(gen, k) for k in _VALUE_FIELDS}
    out["prefix"] = out.get("prefix") or ""
    out["extra"] = {k: v for k, v in (getattr(gen, "extra", None) or {}).items() if k != "cached"}
    return out


class CachedChains:
    """A run's view of the cache: which of its chains are stored (``split``) and storing the ones it
    samples (``remember``). ``model`` is the run's model identity (spec, identity args, weights digest)."""

    def __init__(self, cache: GenerationCache, model: Mapping[str, Any], sampling: SamplingConfig) -> None:
        self.cache, self.model, self.sampling = cache, dict(model), sampling
        self.label = str(self.model.get("spec", ""))
        self._keys: dict[tuple[str, int], str] = {}
        self.found = 0
        self.stored = 0
        #: why storing stopped (the first write that failed), None while it works
        self.failed: str | None = None

    def split(self, requests: Sequence[GenRequest]) -> tuple[list[Generation], list[GenRequest]]:
        """(the chains found, as generations marked ``extra["cached"]``; the requests left to sample)."""
        for req in requests:
            # branch-independent: a request's assistant prefix, when the request type has one, is a key part
            prefix = getattr(req, "prefix", "") or ""
            for c, s in zip(req.chain_indices, req.seeds):
                self._keys[(req.problem_id, c)] = chain_key(self.model, req.messages, self.sampling, s, prefix)
        try:
            stored = self.cache.get_many(self._keys[(r.problem_id, c)] for r in requests for c in r.chain_indices)
        except CacheError as exc:  # damaged pages: every chain is a miss, and nothing is stored in that file
            self.failed = str(exc)
            _log.warning(f"[vpo] warning: {exc}; the run samples every chain and stores none")
            stored = {}
        hits: list[Generation] = []
        left: list[GenRequest] = []
        for req in requests:
            todo = []
            for c, s in zip(req.chain_indices, req.seeds):
                value = stored.get(self._keys[(req.problem_id, c)])
                if value is None:
                    todo.append((c, s))
                    continue
                kept = {k: value[k] for k in _VALUE_FIELDS if k in value}  # a field stored later: its default
                hits.append(Generation(req.problem_id, c, **{"text": "", **kept},
                                       extra={**(value.get("extra") or {}), "cached": True}))
            if todo:
                left.append(dataclasses.replace(req, chain_indices=tuple(c for c, _ in todo),
                                                seeds=tuple(s for _, s in todo)))
        self.found = len(hits)
        return hits, left

    def check_loaded(self, commit: str | None) -> None:
        """Stop storing when the backend loaded another hub commit than the key names (the hub moved
        while the model was downloaded): those chains would be stored under the older commit's key.
        One warning; the rows of this run say which came from the cache (``extra.cached``)."""
        from vpo_harness.harness.core.provenance import hub_commit

        keyed = hub_commit(self.model.get("weights"))
        if not commit or keyed is None or keyed == commit or self.failed:
            return
        self.failed = f"loaded commit {commit}, keyed by {keyed}"
        _log.warning(f"[vpo] warning: {self.label} loaded hub commit {commit}, but the local hub cache named "
              f"{keyed} when the run started: this run's chains are not stored in the generation cache "
              "(set HF_HUB_OFFLINE=1, or pin revision= in --model-args)")

    def remember(self, row: Any) -> None:
        """Store a freshly sampled chain (a scored row); failed and cached ones are not stored. A
        write that fails (a full disk) stops storing with one warning: the run itself goes on, its
        rows are safe in the run folder, only later runs will sample those chains again."""
        if self.failed or getattr(row, "error", None) or (getattr(row, "extra", None) or {}).get("cached"):
            return
        key = self._keys.get((row.problem_id, row.chain_index))
        if key is None:
            return
        try:
            self.cache.put(key, self.label, generation_value(row))
        except CacheError as exc:
            self.failed = str(exc)
            _log.warning(f"[vpo] warning: {exc}; the run goes on without storing its chains in the cache")
            return
        self.stored += 1


def cache_decision(flag: bool | None, spec: str, args: Mapping[str, Any] | None,
                   backend_given: bool = False, weights: str | None = "") -> tuple[bool, str]:
    """(use the cache?, why, for the run's record). ``flag`` (``--cache`` / ``--no-cache``) wins; else
    on for the backends :func:`vpo_harness.harness.core.models.deterministic` names, and off for a backend object
    handed to the runner (the trainer's in-memory policy, whose weights change under one name) and
    for an hf / vllm model ``weights`` is None for (a hub id the local hub cache holds no snapshot
    of: nothing pins the revision that will be downloaded)."""
    if flag is not None:
        return bool(flag), "--cache" if flag else "--no-cache"
    if backend_given:
        return False, "a backend object was passed in (its weights have no digest): off unless --cache"
    from vpo_harness.harness.core.models import deterministic
    from vpo_harness.harness.core.models.zoo import LOCAL_KINDS

    kind = spec.split(":", 1)[0]
    if weights is None and kind in LOCAL_KINDS:
        return False, (f"default: {spec} has no local checkpoint or hub-cache snapshot to key its chains on: "
                       "off unless --cache")
    if deterministic(spec, dict(args or {})):
        return True, f"default: the {kind} backend samples each chain from its own seed"
    return False, f"default: the {kind} backend's chains are not known to be a function of their seed"
