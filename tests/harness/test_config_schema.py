"""harness/core/config_schema.py reads the identity sections' types from the dataclasses that write them: a
new field is checked without an edit there, and the two can no longer disagree."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from vpo_harness.harness.core.config import SamplingSpec, TaskSpec
from vpo_harness.harness.core.config_schema import FIELDS, NULL_IN_OLDER_RECORDS, check_config, field_checks


def test_every_identity_field_of_the_dataclasses_is_checked() -> None:
    for sec, dc in (("task", TaskSpec), ("sampling", SamplingSpec)):
        assert {f.name for f in fields(dc)} <= {k.split(".")[-1] for k in FIELDS if k.startswith(f"identity.{sec}.")}
    assert check_config({"identity": {"sampling": {"prefix": 3}}}) == \
        "field 'identity.sampling.prefix': expected a string, got 3"
    assert check_config({"identity": {"task": {"prompt_style": 3}}}) == \
        "field 'identity.task.prompt_style': expected a string or null, got 3"
    assert check_config({"identity": {"sampling": {"temperature": "hot"}}}) == \
        "field 'identity.sampling.temperature': expected a number or null, got 'hot'"
    assert check_config({"identity": {"sampling": {"ks": [1, "2"]}}}) == \
        "field 'identity.sampling.ks': expected a list of integers or null, got [1, '2']"
    assert "identity.task.prompt_style" in NULL_IN_OLDER_RECORDS
    assert check_config({"identity": {"task": {"prompt_style": None}, "sampling": {"max_tokens": None}}}) is None


@dataclass
class _NewSampling(SamplingSpec):
    beams: int = 1
    stop: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    note: Any = None


def test_a_new_dataclass_field_is_validated_without_touching_record_py() -> None:
    checks = field_checks({"task": TaskSpec, "sampling": _NewSampling})
    assert check_config({"identity": {"sampling": {"beams": "two"}}}, checks) == \
        "field 'identity.sampling.beams': expected an integer, got 'two'"
    assert check_config({"identity": {"sampling": {"stop": ["a", 1]}}}, checks) == \
        "field 'identity.sampling.stop': expected a list of strings, got ['a', 1]"
    assert check_config({"identity": {"sampling": {"extra": []}}}, checks) == \
        "field 'identity.sampling.extra': expected an object, got []"
    assert check_config({"identity": {"sampling": {"beams": 2, "stop": ["x"], "note": object()}}}, checks) is None
