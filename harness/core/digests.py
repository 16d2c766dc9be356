"""Whole-file sha256 digests of checkpoint files, remembered by the file's stat so a big checkpoint
is read once, not on every run.

Why whole: a digest of a file's two ends missed a checkpoint whose middle tensors were edited in
place, and the generation cache then served the old weights' texts. Why a memo: hashing a
multi-GB checkpoint on every ``vpo run`` would cost more than the cache saves. An entry is reused
while the file's (path, size, mtime_ns, ctime_ns, inode, device) are all unchanged. Any write through
the file system changes the mtime; the mtime can be put back (``touch -d``, ``os.utime``, ``rsync
-t``, ``cp -p``) but the ctime cannot: the kernel sets it on every write and every ``utime`` to now.
A replaced file has another inode.

One hole a stat memo has (git calls it "racily clean"): a file written twice within one tick of
the file system's clock keeps its mtime and ctime. So a file whose mtime or ctime is less than
:data:`SETTLE_NS` old is hashed but not remembered; by the time it is remembered, a later write gets a
later ctime.

The memo is a JSON file under the cache root (``digests/files.json``), replaced atomically; two
processes writing it at once lose at most each other's new entries (a re-hash later), and an
unreadable memo is an empty one. Entries of files that no longer exist are dropped when it is saved.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
import uuid
from pathlib import Path

MEMO_NAME = "files.json"
#: a file modified more recently than this is not remembered (see the module docstring)
SETTLE_NS = 2_000_000_000
_CHUNK = 8 << 20
#: the clock the settle rule reads (a name of its own so a test can move it on instead of waiting)
_now_ns = time.time_ns


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def _stat_key(st: os.stat_result) -> list[int]:
    """What must be equal for a remembered digest to stand: the ctime is the part no user call can
    set back, so a rewrite that restores the mtime still misses (nanosecond times: a second's
    resolution would hide two writes within one second)."""
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


class DigestMemo:
    """Digests of files by stat; :meth:`save` writes the entries added since it was read."""

    def __init__(self, folder: Path | None = None) -> None:
        if folder is None:
            from vpo_harness.harness.core.paths import digests_dir

            folder = digests_dir()
        self.path = Path(folder) / MEMO_NAME
        self._entries = self._read()
        self._dirty = False

    def _read(self) -> dict[str, dict]:
        try:
            d = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return d if isinstance(d, dict) else {}

    def digest(self, path: Path) -> str:
        """sha256 of the whole file, from the memo when its stat is unchanged."""
        where = str(Path(path).resolve())
        st = os.stat(where)
        key = _stat_key(st)
        entry = self._entries.get(where)
        if isinstance(entry, dict) and entry.get("stat") == key and isinstance(entry.get("sha256"), str):
            return entry["sha256"]
        value = _hash_file(Path(where))
        if _now_ns() - max(st.st_mtime_ns, st.st_ctime_ns) >= SETTLE_NS:
            self._entries[where] = {"stat": key, "sha256": value}
            self._dirty = True
        return value

    def save(self) -> None:
        """Write the memo (best effort: a memo that cannot be written only costs a re-hash later)."""
        if not self._dirty:
            return
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            merged = {k: v for k, v in {**self._read(), **self._entries}.items() if os.path.exists(k)}
            tmp.write_text(json.dumps(merged, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
            self._dirty = False
        except OSError:
            tmp.unlink(missing_ok=True)
