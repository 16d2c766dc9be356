"""run_facts: the provenance reports print, from config.json records of both ages."""
from __future__ import annotations

from vpo_harness.reports.pools import run_facts


def test_template_args_protocol_and_base_url_from_execution() -> None:
    rec = {"identity": {"task": {"name": "toolrl"}, "model": {"spec": "openai:policy", "args": {}},
                        "sampling": {"m": 1, "n": 30, "chat_template_args": {"enable_thinking": False}}},
           "execution": {"base_url": "http://10.0.0.2:8000/v1", "protocol": "paper"}}
    f = run_facts(rec)
    assert f["base_url"] == "http://10.0.0.2:8000/v1" and f["protocol"] == "paper"
    assert f["chat_template_args"] == {"enable_thinking": False}


def test_older_records_keep_their_base_url() -> None:
    rec = {"identity": {"task": {"name": "maze"}, "model": {"spec": "openai:m", "base_url": "http://old/v1"},
                        "sampling": {"m": 1, "n": 2}}, "execution": {}}
    f = run_facts(rec)
    assert f["base_url"] == "http://old/v1" and f["chat_template_args"] == {} and f["protocol"] is None
