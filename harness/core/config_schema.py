"""The types of a run folder's config.json, checked where it is read (:meth:`RunStore.read_config`).

Why: readers take the fields they need (the pool shape, the ks, the problem ids, the components)
straight from the record, so a hand-edited or damaged config.json with ``"ks": "x"`` or
``"task": 5`` surfaced as ``invalid literal for int()`` or an ``AttributeError`` traceback far from
the file. :func:`check_config` names the field instead, as :func:`vpo_harness.harness.core.rows.check_row` does
for samples.jsonl. Only types are checked, and only of fields that are present: records of older
versions (flat configs, no ``identity``) and of evolve runs (an ``evolve`` section) still read.

The identity sections' types are read from the dataclasses that write them
(:class:`~vpo_harness.harness.core.config.TaskSpec`, ``ModelSpec``, ``SamplingSpec``), so a field added there is
checked here without an edit; only the parts of the record those classes do not describe are listed.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Callable, Mapping

Check = tuple[Callable[[Any], bool], str]


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _opt(check: Check) -> Check:
    ok, what = check
    return (lambda v: v is None or ok(v)), f"{what} or null"


def _list_of(check: Check, what: str) -> Check:
    ok = check[0]
    return (lambda v: isinstance(v, list) and all(ok(x) for x in v)), what


_DICT: Check = (lambda v: isinstance(v, dict), "an object")
_STR: Check = (lambda v: isinstance(v, str), "a string")
_INT: Check = (_int, "an integer")
_NUM: Check = (_num, "a number")
_SCALARS: dict[Any, Check] = {str: _STR, int: _INT, float: _NUM,
                              bool: (lambda v: isinstance(v, bool), "a boolean")}
_PLURAL = {str: "strings", int: "integers", float: "numbers", bool: "booleans"}


def check_of(hint: Any) -> Check | None:
    """The JSON check of a dataclass field's type: scalars, ``X | None``, dicts and dataclasses (an
    object), tuples and lists of a scalar (a JSON list); None for a type that says nothing (Any)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        check = check_of(inner[0]) if len(inner) == 1 else None
        return _opt(check) if check is not None and len(inner) < len(args) else None
    if hint in _SCALARS:
        return _SCALARS[hint]
    if hint is dict or origin is dict or dataclasses.is_dataclass(hint):
        return _DICT
    if origin in (tuple, list) and args and args[0] in _SCALARS:
        return _list_of(_SCALARS[args[0]], f"a list of {_PLURAL[args[0]]}")
    return None


def field_checks(sections: Mapping[str, type] | None = None) -> dict[str, Check]:
    """dotted field -> (check, what it must be) for a config.json record. ``sections``: the identity
    sections' dataclasses (default: those of :class:`~vpo_harness.harness.core.config.RunConfig`). A parent is
    listed before its children, and the children of a parent that is not an object are not looked
    at (its own error is the one line)."""
    from vpo_harness.harness.core.config import IDENTITY_SECTIONS, _SECTIONS

    if sections is None:
        sections = {sec: _SECTIONS[sec] for sec in IDENTITY_SECTIONS}
    out: dict[str, Check] = {
        "ks": _list_of(_INT, "a list of integers"),
        # flat records of older versions keep these at the top
        "task": _STR, "split": _STR, "model": _STR, "m": _INT, "n": _INT,
        "execution": _DICT, "identity": _DICT,
    }
    for sec, dc in sections.items():
        out[f"identity.{sec}"] = _DICT
        hints = typing.get_type_hints(dc)
        for f in dataclasses.fields(dc):
            check = check_of(hints[f.name])
            if check is not None:
                dotted = f"identity.{sec}.{f.name}"
                out[dotted] = _opt(check) if dotted in NULL_IN_OLDER_RECORDS else check
    out.update({
        "identity.resolved_sampling": _DICT,
        "identity.components": _list_of(_STR, "a list of strings"),
        "identity.problems": _DICT,
        "identity.problems.n": _INT,
        "identity.problems.ids": _list_of(_STR, "a list of strings"),
        "identity.metric_seed": _opt(_INT),
        # written by the runner beside the dataclasses' sections, and read back by every reader
        "identity.resolved_sampling.temperature": _opt(_NUM),
        "identity.resolved_sampling.top_p": _opt(_NUM),
        "identity.resolved_sampling.max_tokens": _opt(_INT),
        "identity.model_fingerprint": _opt(_STR),
        # the generation cache's record of the latest invocation (harness.eval.runner._consult_cache)
        "cache": _DICT,
        "cache.enabled": (lambda v: isinstance(v, bool), "true or false"),
        "cache.why": _STR,
        "cache.dir": _STR,
        "cache.runtime": _DICT,
        "cache.found": _INT,
        "cache.sampled": _INT,
    })
    return out


#: fields the dataclasses never leave empty but evolve records of older versions wrote as null (the
#: zoo model's trained style and budget were filled in later), so those folders still read
NULL_IN_OLDER_RECORDS = ("identity.task.prompt_style", "identity.sampling.max_tokens")


def lookup(record: Any, dotted: str) -> tuple[bool, Any]:
    """(present, value) of a dotted field of a nested record (``"identity.task.name"``)."""
    node = record
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def check_config(record: Any, checks: Mapping[str, Check] | None = None) -> str | None:
    """What is wrong with a config.json record, as ``"field 'identity.task.name': expected a
    string, got 5"``, or None when every field present has its type (``checks``: default
    :data:`FIELDS`)."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    for dotted, (ok, what) in (FIELDS if checks is None else checks).items():
        found, value = lookup(record, dotted)
        if found and not ok(value):
            return f"field {dotted!r}: expected {what}, got {_show(value)}"
    return None


#: the checks of a RunConfig's record, built once
FIELDS: dict[str, Check] = field_checks()
