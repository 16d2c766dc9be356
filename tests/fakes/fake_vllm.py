"""A stand-in ``vllm`` module (``LLM``, ``SamplingParams``) to test the adapter without vLLM.

Install it with ``monkeypatch.setitem(sys.modules, "vllm", make_fake_vllm())``. The fake LLM records
its constructor kwargs, every ``generate`` call and every ``chat`` call's ``chat_template_kwargs``; its
text is a pure function of (prompt, seed). ``chat`` renders the fake template (which, like Qwen3's,
writes an empty think block when ``enable_thinking`` is false) and generates from the token ids.
A prompt containing ``BOOM`` makes ``generate`` raise, as vLLM does for an over-long prompt.
"""
from __future__ import annotations

import hashlib
import types
from dataclasses import dataclass
from typing import Any


@dataclass
class SamplingParams:
    n: int = 1
    seed: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int | None = 16
    stop: list[str] | None = None


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    finish_reason: str | None


@dataclass
class RequestOutput:
    prompt: str | None
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput]


class FakeTokenizer:
    """Char-level tokenizer with a tiny chat template (enough for render_messages)."""

    chat_template = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}<|assistant|>"

    def apply_chat_template(self, messages: list[dict[str, str]], tokenize: bool = False,
                            add_generation_prompt: bool = True, continue_final_message: bool = False,
                            **template_vars: Any) -> str:
        if continue_final_message and (add_generation_prompt or messages[-1]["role"] != "assistant"):
            raise ValueError("continue_final_message needs add_generation_prompt=False and an assistant message last")
        text = "".join(f"<|{m['role']}|>{m['content']}" for m in messages)  # the last one stays open
        text += "<|assistant|>" if add_generation_prompt else ""
        if add_generation_prompt and template_vars.get("enable_thinking", True) is False:
            text += "<think>\n\n</think>\n\n"
        return text

    def __call__(self, text: str, add_special_tokens: bool = True) -> dict[str, list[int]]:
        ids = [ord(c) for c in text]
        return {"input_ids": ([1] if add_special_tokens else []) + ids}

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids if i > 1)


class LLM:
    instances: list["LLM"] = []

    def __init__(self, model: str, **kwargs: Any) -> None:
        self.model = model
        self.kwargs = kwargs
        self.calls: list[tuple[list[Any], list[SamplingParams]]] = []
        self.chat_calls: list[dict[str, Any] | None] = []  # chat_template_kwargs of every chat call
        self.chat_modes: list[tuple[bool, bool]] = []  # (add_generation_prompt, continue_final_message) per call
        self.tokenizer = FakeTokenizer()
        LLM.instances.append(self)

    def get_tokenizer(self) -> FakeTokenizer:
        return self.tokenizer

    def chat(self, messages: list[list[dict[str, str]]], sampling_params: list[SamplingParams],
             use_tqdm: bool = True, chat_template_kwargs: dict[str, Any] | None = None,
             add_generation_prompt: bool = True, continue_final_message: bool = False) -> list[RequestOutput]:
        self.chat_calls.append(chat_template_kwargs)
        self.chat_modes.append((add_generation_prompt, continue_final_message))
        prompts = [{"prompt_token_ids": self.tokenizer(
            self.tokenizer.apply_chat_template(conv, tokenize=False, add_generation_prompt=add_generation_prompt,
                                               continue_final_message=continue_final_message,
                                               **(chat_template_kwargs or {})),
            add_special_tokens=False)["input_ids"]} for conv in messages]
        return self.generate(prompts, sampling_params, use_tqdm=use_tqdm)

    def generate(self, prompts: list[Any], sampling_params: list[SamplingParams], use_tqdm: bool = True) -> list[RequestOutput]:
        self.calls.append((list(prompts), list(sampling_params)))
        outs = []
        for prompt, sp in zip(prompts, sampling_params):
            if isinstance(prompt, dict):
                ids = list(prompt["prompt_token_ids"])
                text_prompt = self.tokenizer.decode(ids)
            else:
                ids = self.tokenizer(prompt)["input_ids"]
                text_prompt = prompt
            if "BOOM" in text_prompt:
                raise ValueError("prompt too long (fake)")
            choices = []
            for i in range(sp.n):
                h = hashlib.sha256(f"{text_prompt}|{sp.seed}|{i}".encode()).hexdigest()
                n_tok = min(sp.max_tokens or 16, 4 + int(h[0], 16) % 4)
                text = h[:n_tok]
                finish = "length" if n_tok == sp.max_tokens else "stop"
                for s in sp.stop or []:
                    if s in text:
                        text, finish = text[: text.index(s)], "stop"
                choices.append(CompletionOutput(i, text, list(range(len(text))), finish))
            outs.append(RequestOutput(None if isinstance(prompt, dict) else prompt, ids, choices))
        return outs


def make_fake_vllm() -> types.ModuleType:
    LLM.instances = []
    mod = types.ModuleType("vllm")
    mod.LLM = LLM
    mod.SamplingParams = SamplingParams
    mod.__version__ = "0.0.fake"
    return mod
