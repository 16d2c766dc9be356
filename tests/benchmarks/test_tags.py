"""The linear tag readers give exactly what the old ``re.findall(r"<t>(.*?)</t>")`` gave, and pick
the first or the last block on request. Speed on adversarial input is checked in bench/parsers.py."""
from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from vpo_harness.benchmarks.base import extract_tag, parse_numbered_tags
from vpo_harness.benchmarks.tags import find_tags, strip_blocks


def _ref_findall(text: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}>(.*?)</{tag}>", text, re.S | re.I)


def _ref_numbered(text: str, stem: str, m: int, which: str) -> list[str | None]:
    out = []
    for i in range(1, m + 1):
        found = re.findall(rf"<{stem}_{i}>(.*?)</{stem}_{i}>", text, re.S | re.I)
        out.append((found[0] if which == "first" else found[-1]).strip() if found else None)
    return out


# text made of tag fragments, so that openings, closings, nesting and case changes are frequent
_pieces = st.sampled_from(["<route_1>", "</route_1>", "<route_2>", "</ROUTE_2>", "<Route_10>", "</route_10>",
                           "<route_3", "route_1>", "<think>", "</think>", "<answer>", "</Answer>", " UP ",
                           "x", "\n", "<route_", "_1>", "</"])
_texts = st.lists(_pieces, max_size=40).map("".join) | st.text(max_size=60)


@settings(max_examples=400, deadline=None)
@given(_texts, st.sampled_from(["first", "last"]), st.integers(0, 11))
def test_numbered_tags_match_the_reference_regex(text, which, m):
    assert parse_numbered_tags(text, "route", m, which=which) == _ref_numbered(text, "route", m, which)


@settings(max_examples=400, deadline=None)
@given(_texts, st.sampled_from(["answer", "think", "route_1"]))
def test_find_and_strip_match_the_reference_regex(text, tag):
    assert find_tags(text, tag) == _ref_findall(text, tag)
    assert strip_blocks(text, tag) == re.sub(rf"<{tag}>.*?</{tag}>", " ", text, flags=re.S | re.I)
    found = _ref_findall(text, tag)
    assert extract_tag(text, tag) == (found[-1].strip() if found else None)
    assert extract_tag(text, tag, which="first") == (found[0].strip() if found else None)


def test_first_and_last_differ_on_a_restated_answer():
    text = "<route_1> UP </route_1> <route_2>L</route_2> oops <route_1>DOWN</route_1> <route_2>"
    assert parse_numbered_tags(text, "route", 2) == ["DOWN", "L"]
    assert parse_numbered_tags(text, "route", 2, which="first") == ["UP", "L"]
    assert extract_tag("<a>1</a><a>2</a>", "a", which="first") == "1"
    assert extract_tag("<a>1</a><a>2</a>", "a") == "2"
    # an inner opening tag is content, as with the regex; a number never closed is None
    assert parse_numbered_tags("<route_1>a<route_1>b</route_1>", "route", 1) == ["a<route_1>b"]
    assert parse_numbered_tags("<route_1>a", "route", 1) == [None]
    assert parse_numbered_tags(None, "route", 2) == [None, None]  # type: ignore[arg-type]


def test_which_is_checked():
    import pytest

    with pytest.raises(ValueError, match="which"):
        extract_tag("<a>1</a>", "a", which="middle")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="which"):
        parse_numbered_tags("<r_1>1</r_1>", "r", 1, which="middle")  # type: ignore[arg-type]


def test_adversarial_input_is_read_in_one_pass():
    """Not a timing test: counts regex restarts instead. The old lazy regex re-scanned the text
    from every opening tag; the tokenizer touches each tag once."""
    text = "<route_1>" * 16000
    assert parse_numbered_tags(text, "route", 3) == [None] * 3
    assert find_tags("<think>" * 16000, "think") == []
