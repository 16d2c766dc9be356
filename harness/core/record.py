"""The types of a run folder's config.json, checked where it is read (:meth:`RunStore.read_config`).

Why: readers take the fields they need (the pool shape, the ks, the problem ids, the components)
straight from the record, so a hand-edited or damaged config.json with ``"ks": "x"`` or
``"task": 5`` surfaced as ``invalid literal for int()`` or an ``AttributeError`` traceback far from
the file. :func:`check_config` names the field instead, as :func:`harness.core.rows.check_row` does
for samples.jsonl. Only types are checked, and only of fields that are present: records of older
versions (flat configs, no ``identity``) and of evolve runs (an ``evolve`` section) still read.
"""
from __future__ import annotations

from typing import Any, Callable

Check = tuple[Callable[[Any], bool], str]


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _opt(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _list_of(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


_DICT: Check = (lambda v: isinstance(v, dict), "an object")
_STR: Check = (lambda v: isinstance(v, str), "a string")
_OPT_STR: Check = (_opt(lambda v: isinstance(v, str)), "a string or null")
_INT: Check = (_int, "an integer")
_OPT_INT: Check = (_opt(_int), "an integer or null")
_OPT_NUM: Check = (_opt(_num), "a number or null")
_INTS: Check = (_list_of(_int), "a list of integers")
_STRS: Check = (_list_of(lambda v: isinstance(v, str)), "a list of strings")

#: dotted field -> (check, what it must be). A parent is checked before its children, and the
#: children of a parent that is not an object are not looked at (its own error is the one line).
FIELDS: dict[str, Check] = {
    "ks": _INTS,
    # flat records of older versions keep these at the top
    "task": _STR, "split": _STR, "model": _STR, "m": _INT, "n": _INT,
    "execution": _DICT,
    "identity": _DICT,
    "identity.task": _DICT,
    "identity.task.name": _STR,
    "identity.task.split": _STR,
    "identity.task.options": _DICT,
    "identity.task.data_path": _OPT_STR,
    "identity.task.limit": _OPT_INT,
    "identity.task.prompt_style": _OPT_STR,
    "identity.model": _DICT,
    "identity.model.spec": _STR,
    "identity.model.args": _DICT,
    "identity.sampling": _DICT,
    "identity.sampling.m": _INT,
    "identity.sampling.n": _INT,
    "identity.sampling.ks": _INTS,
    "identity.sampling.temperature": _OPT_NUM,
    "identity.sampling.top_p": _OPT_NUM,
    "identity.sampling.max_tokens": _OPT_INT,
    "identity.sampling.seed": _INT,
    "identity.sampling.chat_template_args": _DICT,
    "identity.sampling.prefix": _STR,
    "identity.resolved_sampling": _DICT,
    "identity.resolved_sampling.temperature": _OPT_NUM,
    "identity.resolved_sampling.top_p": _OPT_NUM,
    "identity.resolved_sampling.max_tokens": _OPT_INT,
    "identity.model_fingerprint": _OPT_STR,
    "identity.components": _STRS,
    "identity.problems": _DICT,
    "identity.problems.n": _INT,
    "identity.problems.ids": _STRS,
    "identity.metric_seed": _OPT_INT,
    # the generation cache's record of the latest invocation (harness.eval.runner._consult_cache)
    "cache": _DICT,
    "cache.enabled": (lambda v: isinstance(v, bool), "true or false"),
    "cache.why": _STR,
    "cache.dir": _STR,
    "cache.runtime": _DICT,
    "cache.found": _INT,
    "cache.sampled": _INT,
}


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def check_config(record: Any) -> str | None:
    """What is wrong with a config.json record, as ``"field 'identity.task.name': expected a
    string, got 5"``, or None when every field present has its type."""
    if not isinstance(record, dict):
        return f"expected a JSON object, got {type(record).__name__}"
    for dotted, (ok, what) in FIELDS.items():
        node: Any = record
        for part in dotted.split("."):
            if not isinstance(node, dict) or part not in node:
                node = _MISSING
                break
            node = node[part]
        if node is _MISSING:
            continue
        if not ok(node):
            return f"field {dotted!r}: expected {what}, got {_show(node)}"
    return None


class _Missing:
    pass


_MISSING = _Missing()
