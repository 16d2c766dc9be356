"""Reading benchmark rows from local files or the HF hub, with errors that point at the bad row.

Every loader in this package reads "rows" (dicts) with a location (file + 1-based line). Keeping the
location next to the row lets field validation raise a :class:`DataError` that names the file, line
and field, which is what a user needs to fix a hand-exported data file.

Formats: ``.jsonl`` (one object per line), ``.json`` (a list of objects, or JSON Lines despite the
name: several public copies of MuSiQue are), ``.parquet`` (line = 1-based row number).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from vpo_harness.benchmarks.base import DataError

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


@dataclass(frozen=True)
class Row:
    """One raw record and where it came from."""

    data: dict[str, Any]
    path: str
    line: int

    def error(self, message: str, field_name: str | None = None) -> DataError:
        return DataError(message, path=self.path, line=self.line, field_name=field_name)


def looks_like_hub_id(path: str | None) -> bool:
    """True for ``owner/name`` strings that are not existing local paths."""
    return bool(path) and not Path(path).exists() and bool(_HUB_ID.match(str(path)))


def read_rows(path: str | Path) -> list[Row]:
    """All rows of a local JSONL / JSON / parquet file. A missing, empty or non-UTF-8 file and bad
    JSON are DataErrors naming the file (and line)."""
    p = Path(path)
    if not p.is_file():
        raise DataError("no such data file", path=str(p))
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        rows = _read_parquet(p)
    elif suffix == ".json" and (text := _utf8(p, p.read_bytes())).lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"invalid JSON: {exc.msg}", path=str(p), line=exc.lineno) from exc
        rows = [_as_row(obj, str(p), i + 1) for i, obj in enumerate(items)]
    else:
        rows = _read_jsonl(p)
    if not rows:
        raise DataError("empty data file (no rows)", path=str(p))
    return rows


def _utf8(p: Path, data: bytes, line: int | None = None) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = line if line is not None else data[:exc.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text (byte 0x{data[exc.start]:02x}); re-save the file as UTF-8",
                        path=str(p), line=at) from None


def _read_jsonl(p: Path) -> list[Row]:
    rows = []
    with p.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = _utf8(p, raw, lineno)
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"invalid JSON: {exc.msg}", path=str(p), line=lineno) from exc
            rows.append(_as_row(obj, str(p), lineno))
    return rows


def duplicate_id(pid: str, row: Row, first: Row, field_name: str) -> DataError:
    """Two rows giving one problem id would be merged (or one dropped) silently downstream, where
    chains are keyed by problem id: an error naming both places instead."""
    return row.error(f"duplicate problem id {pid!r} (first at {first.path} line {first.line})", field_name)


def check_unique_ids(pairs: Iterable[tuple[str, Row]], field_name: str) -> None:
    """Raise :func:`duplicate_id` for the first id seen twice in (id, row) pairs."""
    seen: dict[str, Row] = {}
    for pid, row in pairs:
        if pid in seen:
            raise duplicate_id(pid, row, seen[pid], field_name)
        seen[pid] = row


def _read_parquet(p: Path) -> list[Row]:
    import pyarrow.parquet as pq  # heavy import, only when a parquet file is read

    try:
        records = pq.read_table(p).to_pylist()
    except Exception as exc:  # pyarrow raises several unrelated types for corrupt files
        raise DataError(f"unreadable parquet file: {exc}", path=str(p)) from exc
    return [_as_row(obj, str(p), i + 1) for i, obj in enumerate(records)]


def _as_row(obj: Any, path: str, line: int) -> Row:
    if not isinstance(obj, dict):
        raise DataError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=line)
    return Row(obj, path, line)


def hub_rows(hub_id: str, split: str, *, data_files: Any = None, how_to_fix: str = "") -> list[Row]:
    """Rows of a hub dataset split via ``datasets`` (needs network or a warm HF cache).

    ``data_files`` switches to a builder (e.g. ``hub_id="parquet"`` with URLs). Any failure becomes a
    DataError that repeats ``how_to_fix`` so offline users learn how to pass local files instead.
    """
    where = f"hub:{hub_id}" if data_files is None else f"{hub_id}:{data_files}"
    try:
        import datasets

        if data_files is None:
            ds = datasets.load_dataset(hub_id, split=split)
        else:
            ds = datasets.load_dataset(hub_id, data_files=data_files, split=split)
    except Exception as exc:  # network, auth, missing split: all mean "use local files"
        raise DataError(f"could not load split {split!r} from the hub ({type(exc).__name__}: {exc}). "
                        f"{how_to_fix}", path=where) from exc
    return [_as_row(dict(obj), f"{where}[{split}]", i + 1) for i, obj in enumerate(ds)]


# ---- field checks -------------------------------------------------------------------------------

def need(row: Row, obj: dict[str, Any], key: str, types: type | tuple[type, ...], *,
         field_path: str | None = None) -> Any:
    """``obj[key]`` checked against ``types``; a missing key or wrong type names the field."""
    name = field_path or key
    if not isinstance(obj, dict) or key not in obj:
        raise row.error("missing field", name)
    value = obj[key]
    if isinstance(types, type):
        types = (types,)
    # bool is an int subclass: an int field must not silently accept true/false
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
        want = "/".join(t.__name__ for t in types)
        raise row.error(f"expected {want}, got {type(value).__name__}", name)
    return value


def need_str_list(row: Row, obj: dict[str, Any], key: str, *, min_len: int = 0,
                  field_path: str | None = None) -> list[str]:
    """A list of strings with at least ``min_len`` entries."""
    name = field_path or key
    value = need(row, obj, key, list, field_path=name)
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise row.error(f"expected a string, got {type(item).__name__}", f"{name}[{i}]")
    if len(value) < min_len:
        raise row.error(f"expected at least {min_len} entries, got {len(value)}", name)
    return value


def iter_dicts(row: Row, value: Any, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, item) over a list of objects, naming ``name[i]`` when an item is not an object."""
    if not isinstance(value, list):
        raise row.error(f"expected a list, got {type(value).__name__}", name)
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise row.error(f"expected an object, got {type(item).__name__}", f"{name}[{i}]")
        yield i, item
