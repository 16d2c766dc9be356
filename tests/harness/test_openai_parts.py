"""The openai backend's parts on their own, without a server: its settings (the one parser of its
--model-args), its retry policy's give-up clock and its retry line, and its reply reading."""
from __future__ import annotations

import logging

import pytest

from vpo_harness.harness.core.models import load_backend
from vpo_harness.harness.core.models.endpoints import ServerUnreachable
from vpo_harness.harness.core.models.openai_reply import GarbageResponse, TooFewChoices, read_choices, usage
from vpo_harness.harness.core.models.openai_retry import RequestDeadline, RetryPolicy
from vpo_harness.harness.core.models.openai_settings import OpenAISettings
from vpo_harness.harness.core.models.transport import Timeout


def test_settings_parse_model_args_once_and_refuse_unknown_names_in_one_line() -> None:
    s = OpenAISettings.from_args({"timeout": 5, "headers": "X-A: 1;X-B:2", "concurrency": 3})
    assert s.attempt_s == 5.0 and s.deadline == 5.0 and s.header_map == {"X-A": "1", "X-B": "2"}
    with pytest.raises(ValueError, match=r"^unknown --model-args timout for the openai backend; valid: .*timeout"):
        OpenAISettings.from_args({"timout": 5})
    # the factory and the backend read the same parser
    with pytest.raises(ValueError, match="unknown --model-args timout"):
        load_backend("openai:m", base_url="http://127.0.0.1:1/v1", model_args="timout=5")


def test_settings_record_leaves_out_the_key_and_the_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    s = OpenAISettings(api_key="sk-hidden", headers={"X-Secret": "v"}, backoff_base=0.5)
    rec = s.describe()
    assert "api_key" not in rec and "backoff_base" not in rec and "backoff_max" not in rec
    assert rec["headers"] == ["X-Secret"] and "sk-hidden" not in repr(rec) and "'v'" not in repr(rec)
    assert s.resolved_api_key() == "sk-hidden"
    assert OpenAISettings().resolved_api_key() == "EMPTY"


def test_give_up_clock_counts_from_the_first_failure_and_a_success_resets_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr("vpo_harness.harness.core.models.openai_retry.time.monotonic", lambda: now[0])
    policy = RetryPolicy(OpenAISettings(give_up_after=10), ["http://a/v1"])
    policy.give_up_if_silent(Timeout("t"), started=100.0)  # failing for 0 s
    now[0] = 109.0
    policy.give_up_if_silent(Timeout("t"), started=108.0)  # 9 s since the first failure
    now[0] = 110.5
    policy.give_up_if_silent(ValueError("ours"), started=100.0)  # not the server's failure: never counted
    with pytest.raises(ServerUnreachable, match=r"no reply from the server at http://a/v1 succeeded for 10 s"):
        policy.give_up_if_silent(RequestDeadline("slow"), started=110.0)
    policy.succeeded()  # a reply: the clock starts again from the next failure
    policy.give_up_if_silent(Timeout("t"), started=110.5)


def test_retry_line_is_a_logging_record() -> None:
    """A caller can capture (or silence) it: a record under the vpo_harness logger, not a print."""
    got: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = got.append  # type: ignore[method-assign]
    logger = logging.getLogger("vpo_harness")
    logger.addHandler(handler)
    try:
        RetryPolicy.say_retry("http://a/v1", 2, Timeout("slow"), 1.25)
    finally:
        logger.removeHandler(handler)
    [rec] = got
    assert rec.name.startswith("vpo_harness.") and rec.levelno == logging.WARNING
    assert rec.getMessage() == "[vpo] http://a/v1: attempt 2 failed (Timeout: slow); next try in 1.2 s"


def test_reply_reading_orders_choices_and_refuses_what_cannot_be_scored() -> None:
    reply = {"choices": [{"index": 1, "message": {"content": "b"}, "finish_reason": "stop"},
                         {"index": 0, "message": {"content": "a", "reasoning_content": "r"}, "finish_reason": "length"}],
             "usage": {"prompt_tokens": 7, "completion_tokens": True}}
    got = read_choices(reply, "chat", 2, "auto")
    assert [(c.text, c.finish, c.reasoning) for c in got] == [("a", "length", "r"), ("b", "stop", None)]
    assert usage(reply) == (7, None)  # a bool is not a count
    with pytest.raises(GarbageResponse, match="null message.content"):
        read_choices({"choices": [{"message": {"content": None}}]}, "chat", 1, "auto")
    with pytest.raises(GarbageResponse, match="no choices"):
        read_choices({"choices": []}, "completions", 1, "auto")
    with pytest.raises(TooFewChoices):
        read_choices({"choices": [{"text": "x"}]}, "completions", 2, "auto")
    with pytest.raises(GarbageResponse, match="asked for n=2, got 1"):
        read_choices({"choices": [{"text": "x"}]}, "completions", 2, True)
