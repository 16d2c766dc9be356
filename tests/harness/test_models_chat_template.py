"""Chat-template arguments through every backend: a Qwen3-style template that branches on
``enable_thinking`` (an empty think block pre-filled when it is false, as Qwen3's does), on a tiny
WordLevel tokenizer trained in-process; hf renders it, the vllm adapter hands the arguments to
``LLM.chat``, the openai backend sends them as ``chat_template_kwargs`` (or renders them itself in
completions mode)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from vpo_harness.harness.core.models import load_backend
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig, chat_template_args, template_kwargs
from vpo_harness.harness.core.models.prompting import render_messages
from tests.fakes.qwen3_template import QWEN3_STYLE, THINK_BLOCK

pytestmark = pytest.mark.timeout(120)

NO_THINK = SamplingConfig(temperature=0.0, max_tokens=3, chat_template_args=(("enable_thinking", False),))
THINK = SamplingConfig(temperature=0.0, max_tokens=3, chat_template_args=(("enable_thinking", True),))
DEFAULT = SamplingConfig(temperature=0.0, max_tokens=3)
MESSAGES = [{"role": "system", "content": "answer briefly"}, {"role": "user", "content": "what is two plus two"}]


def qwen3_style_tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<unk>", "<pad>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"]
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    words = "system user assistant answer briefly what is two plus two four the a yes no"
    tok.train_from_iterator([words] * 3, trainer=trainers.WordLevelTrainer(special_tokens=special, show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", eos_token="<|im_end|>")
    fast.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<think>", "</think>"]})
    fast.chat_template = QWEN3_STYLE
    return fast


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    return qwen3_style_tokenizer()


def req(k: int = 1) -> GenRequest:
    return GenRequest("p0", [dict(m) for m in MESSAGES], tuple(range(k)), tuple(range(7, 7 + k)))


def test_sampling_config_field_and_helpers():
    assert SamplingConfig().chat_template_args == ()
    assert chat_template_args({"b": 1, "a": False}) == (("a", False), ("b", 1))  # sorted, hashable
    assert hash(SamplingConfig(chat_template_args=chat_template_args({"a": 1})))
    assert template_kwargs(NO_THINK) == {"enable_thinking": False} and template_kwargs(DEFAULT) == {}


def test_template_renders_the_think_block_only_when_thinking_is_off(tokenizer):
    off = render_messages(MESSAGES, tokenizer, {"enable_thinking": False})
    on = render_messages(MESSAGES, tokenizer, {"enable_thinking": True})
    default = render_messages(MESSAGES, tokenizer)
    assert off.endswith("<|im_start|>assistant\n" + THINK_BLOCK)
    assert on == default and default.endswith("<|im_start|>assistant\n") and off == default + THINK_BLOCK


def test_template_args_without_a_template_say_so_once(capsys):
    import vpo_harness.harness.core.models.prompting as prompting

    prompting._WARNED.clear()
    assert render_messages(MESSAGES, None, {"enable_thinking": False}) == render_messages(MESSAGES, None)
    render_messages(MESSAGES, None, {"enable_thinking": False})
    err = capsys.readouterr().err
    assert err.count("enable_thinking=False have no effect") == 1


@pytest.fixture(scope="module")
def hf_backend(tokenizer):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from vpo_harness.harness.core.models.hf import HFBackend

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    return HFBackend.from_model(LlamaForCausalLM(config), tokenizer, name="qwen3-style")


def test_hf_renders_the_template_arguments(hf_backend, tokenizer):
    text_off, add_special = hf_backend._prompt(req(), NO_THINK)
    assert text_off.endswith(THINK_BLOCK) and add_special is False
    assert not hf_backend._prompt(req(), DEFAULT)[0].endswith(THINK_BLOCK)
    off = list(hf_backend.generate([req()], NO_THINK))
    on = list(hf_backend.generate([req()], THINK))
    assert off[0].error is None and on[0].error is None
    # the model saw the two think-block tokens more (WordLevel: <think>, </think>; newlines vanish)
    assert off[0].prompt_tokens == on[0].prompt_tokens + 2


def test_vllm_adapter_hands_the_arguments_to_llm_chat(monkeypatch, tokenizer):
    from tests.fakes.fake_vllm import make_fake_vllm

    mod = make_fake_vllm()
    monkeypatch.setitem(sys.modules, "vllm", mod)
    b = load_backend("vllm:test/qwen3-style")
    llm = mod.LLM.instances[-1]
    llm.tokenizer = b.tokenizer = tokenizer
    list(b.generate([req(2)], NO_THINK))
    list(b.generate([req(1)], DEFAULT))
    assert llm.chat_calls == [{"enable_thinking": False}, None]
    (off_prompts, off_params), (default_prompts, _) = llm.calls
    assert len(off_prompts) == len(off_params) == 2 and [p.seed for p in off_params] == [7, 8]
    off_text = tokenizer.decode(off_prompts[0]["prompt_token_ids"])
    default_text = tokenizer.decode(default_prompts[0]["prompt_token_ids"])
    assert "<think>" in off_text and "</think>" in off_text and "<think>" not in default_text
    assert len(off_prompts[0]["prompt_token_ids"]) == len(default_prompts[0]["prompt_token_ids"]) + 2


def test_openai_chat_sends_chat_template_kwargs():
    from tests.fakes.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(lambda body, i: "<answer>4</answer>") as srv:
        b = load_backend("openai:scripted", base_url=srv.base_url,
                         model_args={"use_n": False, "max_retries": 0,
                                     "extra_body": {"chat_template_kwargs": {"keep": 1}, "top_k": 20}})
        try:
            off = list(b.generate([req()], NO_THINK))
            plain = list(b.generate([req()], DEFAULT))
        finally:
            b.close()
    assert off[0].error is None and plain[0].error is None
    sent_off, sent_plain = srv.requests
    assert sent_off["chat_template_kwargs"] == {"keep": 1, "enable_thinking": False}  # merged over extra_body
    assert sent_off["top_k"] == 20 and sent_off["messages"] == MESSAGES
    assert sent_plain["chat_template_kwargs"] == {"keep": 1}


def test_openai_completions_mode_renders_the_arguments_locally(tmp_path: Path, tokenizer):
    from bench.loopback_openai import FakeOpenAIServer

    tokenizer.save_pretrained(tmp_path / "tok")
    with FakeOpenAIServer() as srv:
        b = load_backend("openai:fake", base_url=srv.base_url,
                         model_args={"mode": "completions", "use_n": False, "tokenizer": str(tmp_path / "tok")})
        try:
            gens = list(b.generate([req()], NO_THINK)) + list(b.generate([req()], DEFAULT))
        finally:
            b.close()
    assert all(g.error is None for g in gens)
    off, plain = (e.body for e in srv.log)
    assert off["prompt"].endswith(THINK_BLOCK) and not plain["prompt"].endswith(THINK_BLOCK)
    assert "chat_template_kwargs" not in off  # the server applies no template in completions mode
