"""`vpo serve`'s request rules without a socket: every bad field is a BadRequest naming it."""
from __future__ import annotations

import math

import pytest

from vpo_harness.harness.core.models.base import SamplingConfig
from vpo_harness.search.serve_protocol import (
    DEFAULT_MAX_TOKENS,
    BadRequest,
    choice_seeds,
    opening_chunks,
    parse_body,
    result_chunks,
)

MSG = [{"role": "user", "content": "hi"}]


def chat(**fields):
    return {"model": "m", "messages": MSG, **fields}


#: (body, field the error must name); the HTTP test sends the same list through the server
BAD_CHAT = [
    (chat(temperature=math.nan), "temperature"),
    (chat(temperature=math.inf), "temperature"),
    (chat(temperature=-0.1), "temperature"),
    (chat(temperature=2.5), "temperature"),
    (chat(temperature="hot"), "temperature"),
    (chat(temperature=True), "temperature"),
    (chat(top_p=0), "top_p"),
    (chat(top_p=7), "top_p"),
    (chat(top_p=-0.5), "top_p"),
    (chat(top_p=math.nan), "top_p"),
    (chat(max_tokens=0), "max_tokens"),
    (chat(max_tokens=-5), "max_tokens"),
    (chat(max_tokens=2**70), "max_tokens"),
    (chat(max_tokens=1.5), "max_tokens"),
    (chat(max_tokens="10"), "max_tokens"),
    (chat(max_completion_tokens=0), "max_completion_tokens"),
    (chat(n=0), "n"),
    (chat(n=129), "n"),
    (chat(n=2.0), "n"),
    (chat(n=True), "n"),
    (chat(seed="7"), "seed"),
    (chat(seed=1.5), "seed"),
    (chat(seed=True), "seed"),
    (chat(seed=-1), "seed"),
    (chat(seed=2**63), "seed"),
    (chat(seed=2**200), "seed"),
    ({"messages": MSG}, "model"),
    (chat(model=None), "model"),
    (chat(model=5), "model"),
    ({"model": "m"}, "messages"),
    (chat(messages=[]), "messages"),
    (chat(messages="hi"), "messages"),
    (chat(messages=[1]), "messages[0]"),
    (chat(messages=[{"role": "robot", "content": "x"}]), "messages[0].role"),
    (chat(messages=[{"content": "x"}]), "messages[0].role"),
    (chat(messages=[{"role": "user", "content": 5}]), "messages[0].content"),
    (chat(messages=[{"role": "user", "content": None}]), "messages[0].content"),
    (chat(messages=[{"role": "user", "content": {"text": "x"}}]), "messages[0].content"),
    (chat(messages=[MSG[0], {"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]),
     "messages[1].content[0]"),
    (chat(model=5), "model"),
    (chat(logprobs=True), "logprobs"),
    (chat(top_logprobs=3), "top_logprobs"),
    (chat(stream="yes"), "stream"),
    (chat(stream_options={"include_usage": "yes"}), "stream_options"),
    (chat(stop=5), "stop"),
    (chat(stop=["a", 1]), "stop"),
    (chat(stop=["s"] * 17), "stop"),
    (chat(presence_penalty=0.5), "presence_penalty"),
    (chat(frequency_penalty=-1), "frequency_penalty"),
    (chat(logit_bias={"5": 10}), "logit_bias"),
    (chat(tools=[{"type": "function"}]), "tools"),
    (chat(response_format={"type": "json_object"}), "response_format"),
    (chat(best_of=3), "best_of"),
    (chat(chat_template_kwargs=["enable_thinking"]), "chat_template_kwargs"),
    (chat(chat_template_kwargs={"tools": [1, 2]}), "chat_template_kwargs.tools"),
]
BAD_COMPLETION = [
    ({"model": "m"}, "prompt"),
    ({"model": "m", "prompt": 5}, "prompt"),
    ({"model": "m", "prompt": ["a", "b"]}, "prompt"),
    ({"model": "m", "prompt": "x", "logprobs": 2}, "logprobs"),
    ({"model": "m", "prompt": "x", "logprobs": 0}, "logprobs"),
    ({"model": "m", "prompt": "x", "echo": True}, "echo"),
    ({"model": "m", "prompt": "x", "suffix": "tail"}, "suffix"),
]


@pytest.mark.parametrize("body,param", BAD_CHAT, ids=[f"{p}-{i}" for i, (_, p) in enumerate(BAD_CHAT)])
def test_bad_chat_fields_name_the_field(body, param) -> None:
    with pytest.raises(BadRequest) as err:
        parse_body(body, "chat", model_name="m")
    assert err.value.param == param and err.value.status == 400
    assert f"'{param}'" in str(err.value)


@pytest.mark.parametrize("body,param", BAD_COMPLETION, ids=[p for _, p in BAD_COMPLETION])
def test_bad_completion_fields_name_the_field(body, param) -> None:
    with pytest.raises(BadRequest) as err:
        parse_body(body, "completion", model_name="m")
    assert err.value.param == param


def test_unknown_model_is_a_404_and_a_missing_one_a_400() -> None:
    with pytest.raises(BadRequest) as err:
        parse_body(chat(model="gpt-4o"), "chat", model_name="m")
    assert err.value.status == 404 and err.value.code == "model_not_found" and "'m'" in str(err.value)
    with pytest.raises(BadRequest, match="required; this server serves 'm'") as err:
        parse_body({"messages": MSG}, "chat", model_name="m")
    assert err.value.status == 400


def test_seed_range_ends_are_accepted_and_large_seeds_do_not_alias() -> None:
    assert choice_seeds(0, 1) == [0] and choice_seeds(2**31 - 1, 1) == [2**31 - 1]
    top = choice_seeds(2**63 - 1, 2)
    assert all(0 <= s < 2**31 for s in top)
    # masking would make 2**31 the same request as 0, and 2**32 + 5 the same as 5
    assert choice_seeds(2**31, 1) != choice_seeds(0, 1)
    assert choice_seeds(2**32 + 5, 1) != choice_seeds(5, 1)


def test_max_tokens_against_the_context() -> None:
    with pytest.raises(BadRequest, match="more than the model's context of 100"):
        parse_body(chat(max_tokens=101), "chat", model_name="m", context_len=100)
    assert parse_body(chat(max_tokens=100), "chat", model_name="m", context_len=100).sampling.max_tokens == 100
    # no budget asked for: the default, cut to a small context instead of refusing the request
    assert parse_body(chat(), "chat", model_name="m", context_len=64).sampling.max_tokens == 64
    assert parse_body(chat(), "chat", model_name="m").sampling.max_tokens == DEFAULT_MAX_TOKENS
    assert parse_body(chat(max_completion_tokens=7), "chat", model_name="m").sampling.max_tokens == 7


def test_good_body_becomes_the_sampling_config() -> None:
    job = parse_body(chat(temperature=0, top_p=1, max_tokens=9, stop="END", n=3, seed=5, presence_penalty=0,
                          logprobs=False, stream=True, stream_options={"include_usage": True}, user="u",
                          some_future_field={"x": 1}), "chat", model_name="m")
    assert job.sampling == SamplingConfig(temperature=0.0, top_p=1.0, max_tokens=9, stop=("END",))
    assert job.seeds == choice_seeds(5, 3) and len(set(job.seeds)) == 3 and job.seeds[0] == 5
    assert job.stream and job.include_usage
    parts = parse_body(chat(messages=[{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                   {"type": "text", "text": "b"}]},
                                      {"role": "assistant", "content": None}]), "chat", model_name="m")
    assert parts.payload == [{"role": "user", "content": "ab"}, {"role": "assistant", "content": ""}]


def test_chat_template_kwargs_merge_over_the_server_default() -> None:
    default = {"enable_thinking": False, "lang": "en"}
    plain = parse_body(chat(), "chat", model_name="m", template_args=default)
    assert plain.sampling.chat_template_args == (("enable_thinking", False), ("lang", "en"))
    over = parse_body(chat(chat_template_kwargs={"enable_thinking": True, "a": 1}), "chat", model_name="m",
                      template_args=default)
    assert over.sampling.chat_template_args == (("a", 1), ("enable_thinking", True), ("lang", "en"))
    assert hash(over.sampling) != hash(plain.sampling)  # different templates are never batched together


def test_stream_chunks_carry_each_choice() -> None:
    results = [{"text": "ab", "prompt_tokens": 3, "completion_tokens": 2, "finish_reason": "length"},
               {"text": "c", "prompt_tokens": 3, "completion_tokens": 1, "finish_reason": "stop"}]
    head = opening_chunks("chat", "id1", "m", 0, 2)
    assert [c["choices"][0]["delta"] for c in head] == [{"role": "assistant", "content": ""}] * 2
    tail = result_chunks("chat", "id1", "m", 0, results, include_usage=True)
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == "id1" for c in head + tail)
    text = {0: "", 1: ""}
    fin = {}
    for c in tail[:-1]:
        ch = c["choices"][0]
        text[ch["index"]] += ch["delta"].get("content", "")
        if ch["finish_reason"]:
            fin[ch["index"]] = ch["finish_reason"]
    assert text == {0: "ab", 1: "c"} and fin == {0: "length", 1: "stop"}
    assert tail[-1]["choices"] == [] and tail[-1]["usage"] == {"prompt_tokens": 3, "completion_tokens": 3,
                                                                "total_tokens": 6}
    comp = result_chunks("completion", "id2", "m", 0, results, include_usage=False)
    assert [c["choices"][0]["text"] for c in comp] == ["ab", "c"] and opening_chunks("completion", "i", "m", 0, 2) == []
