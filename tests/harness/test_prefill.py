"""Assistant prefill (``GenRequest.prefix``) through every backend, `vpo serve` and the runner's rows.

Each backend is shown a prefix and must (a) put it in front of the model as an open assistant turn
(the rendered prompt ends with it, or the request carries vLLM's continue fields), and (b) record the
completion as prefix + continuation. The fakes answer with a continuation of what they were given, so
a backend that drops the prefix, opens a new turn after it, or forgets to prepend it fails here.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from vpo_harness.harness.core.models.base import Backend, GenRequest, SamplingConfig
from vpo_harness.harness.core.models.prefill import CONTINUE_FIELDS, prefill_fields
from tests.fakes.scripted_backend import ScriptedBackend
from tests.fakes.scripted_openai import ScriptedOpenAIServer, prefilled

MSGS = [{"role": "user", "content": "count on"}]
PREFIX = "one two three"


def _gen(backend: Backend, prefix: str = PREFIX, sampling: SamplingConfig | None = None, seeds=(11,)):
    req = GenRequest("p", MSGS, tuple(range(len(seeds))), tuple(seeds), prefix=prefix)
    return list(backend.generate([req], sampling or SamplingConfig(max_tokens=8)))


def test_prefill_fields_are_vllms_and_empty_without_a_prefix():
    msgs, extra = prefill_fields(MSGS, PREFIX)
    assert msgs == MSGS + [{"role": "assistant", "content": PREFIX}]
    assert extra == {"continue_final_message": True, "add_generation_prompt": False} == CONTINUE_FIELDS
    assert prefill_fields(MSGS, "") == (MSGS, {})


# ---- hf: a real (tiny) model --------------------------------------------------------------------------
torch = pytest.importorskip("torch")
from tests.fakes.tiny_llama import build_tiny_llama, tiny_llama_dir  # noqa: E402,F401 (fixture)


@pytest.fixture(scope="module")
def hf_backend():
    from vpo_harness.harness.core.models.hf import HFBackend

    model, tok = build_tiny_llama()
    return HFBackend.from_model(model, tok, name="tiny", batch_size=4)


def test_hf_continues_the_prefix_as_the_model_would(hf_backend):
    """Greedy continuation of the prefix equals transformers' own greedy decoding of the chat prompt
    with the assistant turn opened and the prefix written into it (no end-of-turn after it)."""
    tok, model = hf_backend.tokenizer, hf_backend.model
    greedy = SamplingConfig(temperature=0.0, max_tokens=6)
    (g,) = _gen(hf_backend, sampling=greedy)
    opened = tok.apply_chat_template(MSGS, tokenize=False, add_generation_prompt=True) + PREFIX
    enc = tok(opened, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id)
    expected = tok.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    assert g.error is None and g.text == PREFIX + expected
    assert g.prefix == PREFIX and g.prefix_tokens == len(tok(PREFIX, add_special_tokens=False)["input_ids"])
    assert g.completion_tokens is not None and g.completion_tokens <= 6


def test_hf_prompt_ends_with_the_open_prefix(hf_backend):
    text, _ = hf_backend._prompt(GenRequest("p", MSGS, (0,), (1,), prefix=PREFIX), SamplingConfig())
    assert text.endswith("<|im_start|>assistant\n" + PREFIX)
    plain, _ = hf_backend._prompt(GenRequest("p", MSGS, (0,), (1,)), SamplingConfig())
    assert plain.endswith("<|im_start|>assistant\n") and PREFIX not in plain


def test_hf_mixed_batch_keeps_each_chains_prefix(hf_backend):
    reqs = [GenRequest("a", MSGS, (0, 1), (5, 6), prefix=PREFIX), GenRequest("b", MSGS, (0,), (5,))]
    got = {(g.problem_id, g.chain_index): g for g in hf_backend.generate(reqs, SamplingConfig(max_tokens=4))}
    assert got[("a", 0)].text.startswith(PREFIX) and got[("a", 1)].text.startswith(PREFIX)
    assert got[("b", 0)].prefix == "" and got[("b", 0)].prefix_tokens is None


def test_template_that_cannot_continue_is_one_line():
    from vpo_harness.harness.core.models.prompting import render_messages

    class Tok:
        chat_template = "x"

        def apply_chat_template(self, *a, **kw):
            raise ValueError("continue_final_message is set but the final message does not appear in the chat\nmore")

    with pytest.raises(ValueError, match="cannot continue an assistant prefix") as err:
        render_messages(MSGS, Tok(), prefix=PREFIX)
    assert "\n" not in str(err.value)


# ---- vllm offline: the fake engine ---------------------------------------------------------------------
@pytest.fixture
def fake_vllm(monkeypatch):
    from tests.fakes.fake_vllm import make_fake_vllm

    mod = make_fake_vllm()
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod


def test_vllm_chat_continues_the_final_message(fake_vllm, tmp_path):
    from vpo_harness.harness.core.models.vllm_offline import VLLMOfflineBackend

    (tmp_path / "config.json").write_text("{}")
    b = VLLMOfflineBackend(str(tmp_path))
    reqs = [GenRequest("a", MSGS, (0,), (3,), prefix=PREFIX), GenRequest("b", MSGS, (0,), (3,))]
    got = {g.problem_id: g for g in b.generate(reqs, SamplingConfig(max_tokens=8))}
    llm = fake_vllm.LLM.instances[-1]
    assert sorted(llm.chat_modes) == [(False, True), (True, False)]  # one call per mode
    prompts = [llm.tokenizer.decode(p["prompt_token_ids"]) for call, _ in llm.calls for p in call]
    assert "<|user|>count on<|assistant|>" + PREFIX in prompts          # the prefix, left open
    assert "<|user|>count on<|assistant|>" in prompts                   # the plain request, unchanged
    # the fake's text is a pure function of the prompt: the prefixed chain's continuation is the one
    # for the open prompt, with the prefix put back in front
    alone = fake_vllm.LLM("x").generate([{"prompt_token_ids": llm.tokenizer(
        "<|user|>count on<|assistant|>" + PREFIX, add_special_tokens=False)["input_ids"]}],
        [fake_vllm.SamplingParams(seed=3, max_tokens=8)])[0].outputs[0].text
    assert got["a"].text == PREFIX + alone and got["a"].prefix_tokens == len(PREFIX)
    assert not got["b"].text.startswith(PREFIX) and got["b"].prefix == ""


# ---- openai: a loopback server that continues what it was given ----------------------------------------
def _continuing(body, idx):
    prefix = prefilled(body)
    return " four five" if prefix is not None else "fresh answer"


def test_openai_chat_sends_the_continue_fields_and_prepends_the_prefix():
    from vpo_harness.harness.core.models.openai_server import OpenAIServerBackend

    with ScriptedOpenAIServer(_continuing) as srv:
        b = OpenAIServerBackend("scripted", base_url=srv.base_url, use_n=False, max_retries=0,
                                extra_body={"chat_template_kwargs": {"enable_thinking": False}})
        try:
            (g,) = _gen(b)
            (plain,) = _gen(b, prefix="")
        finally:
            b.close()
        sent, sent_plain = srv.requests
    assert g.error is None and g.text == PREFIX + " four five" and g.prefix == PREFIX
    assert sent["messages"][-1] == {"role": "assistant", "content": PREFIX}
    assert sent["continue_final_message"] is True and sent["add_generation_prompt"] is False
    assert sent["chat_template_kwargs"] == {"enable_thinking": False}  # the user's extra body is kept
    assert plain.text == "fresh answer" and "continue_final_message" not in sent_plain
    assert sent_plain["messages"] == MSGS


# ---- vpo serve: the fields, their validation, the reply holds the continuation only --------------------
@pytest.fixture(scope="module")
def served():
    from vpo_harness.search.serve import ModelServer

    def cont(req, c, s):
        return f" after[{req.prefix}]" if req.prefix else "new turn"

    backend = ScriptedBackend(cont)
    srv = ModelServer(backend, "m").start_background()
    yield srv, backend
    srv.shutdown()


def _post(srv, body):
    import httpx

    return httpx.post(f"{srv.url}/chat/completions", json=body, timeout=60)


def test_serve_continues_the_final_assistant_message(served):
    srv, backend = served
    body = {"model": "m", "messages": MSGS + [{"role": "assistant", "content": PREFIX}], "seed": 1,
            "continue_final_message": True, "add_generation_prompt": False}
    r = _post(srv, body)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["content"] == f" after[{PREFIX}]"  # continuation only, as vLLM
    req = backend.calls[-1][0][0]
    assert req.prefix == PREFIX and req.messages == MSGS  # the assistant turn became the prefix


def test_serve_through_the_openai_backend_records_prefix_plus_continuation(served):
    from vpo_harness.harness.core.models.openai_server import OpenAIServerBackend

    srv, _ = served
    b = OpenAIServerBackend("m", base_url=srv.url, use_n=False, max_retries=0)
    try:
        (g,) = _gen(b)
    finally:
        b.close()
    assert g.text == PREFIX + f" after[{PREFIX}]"


@pytest.mark.parametrize("extra, last_role, param", [
    ({"continue_final_message": True, "add_generation_prompt": True}, "assistant", "continue_final_message"),
    ({"continue_final_message": True}, "assistant", "continue_final_message"),  # generation prompt defaults on
    ({"continue_final_message": True, "add_generation_prompt": False}, "user", "messages"),
    ({"add_generation_prompt": False}, "user", "add_generation_prompt"),
    ({"continue_final_message": "yes", "add_generation_prompt": False}, "assistant", "continue_final_message"),
])
def test_serve_refuses_bad_prefill_fields(served, extra, last_role, param):
    srv, _ = served
    r = _post(srv, {"model": "m", "messages": MSGS + [{"role": last_role, "content": "x"}], **extra})
    assert r.status_code == 400
    assert r.json()["error"]["param"] == param


# ---- mock backend ----------------------------------------------------------------------------------------
def test_mock_continues_the_open_answer_and_writes_the_rest_of_the_set():
    from vpo_harness.harness.core.models.mock import MockBackend

    msgs = [{"role": "user", "content": "<route_1>...</route_1> <route_2>...</route_2> <route_3>...</route_3>"}]
    b = MockBackend("moves", length=5)
    (g,) = list(b.generate([GenRequest("p", msgs, (0,), (4,), prefix="<route_1>UP LEFT")], SamplingConfig()))
    from vpo_harness.benchmarks import get_task

    answers = get_task("maze").parse(g.text, 3)
    assert g.text.startswith("<route_1>UP LEFT, ") and all(a is not None for a in answers)
    assert answers[0].startswith("UP LEFT ")


# ---- the runner: rows and identity -----------------------------------------------------------------------
def test_run_rows_hold_the_prefix_and_identity_names_it(tmp_path):
    from vpo_harness.harness.core.config import RunConfig
    from vpo_harness.harness.eval.runner import run

    seen = []

    def cont(req, c, s):
        seen.append(req.prefix)
        return " RIGHT</route_1><route_2>DOWN</route_2>"

    kw = dict(task="maze", model="scripted:x", limit=2, n=2, m=2, ks=(1,), progress=False)
    cfg = RunConfig.of(**kw, prefix="<route_1>UP", out=str(tmp_path / "a"))
    folder = run(cfg, backend=ScriptedBackend(cont))
    rows = [json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines()]
    assert seen == ["<route_1>UP"] * 4
    assert all(r["prefix"] == "<route_1>UP" and r["prefix_tokens"] == 1 for r in rows)
    assert all(r["text"].startswith("<route_1>UP RIGHT</route_1>") and r["answers"][0] == "UP RIGHT" for r in rows)
    ident = json.loads((folder / "config.json").read_text())["identity"]
    assert ident["sampling"]["prefix"] == "<route_1>UP"
    plain = RunConfig.of(**kw)
    assert "prefix" not in plain.identity()["sampling"]  # runs without one keep their identity
    assert plain.default_out() != cfg.default_out()
    # rows of a run without a prefix carry no prefix fields
    folder = run(RunConfig.of(**kw, out=str(tmp_path / "b")), backend=ScriptedBackend(cont))
    assert all("prefix" not in json.loads(x) for x in (folder / "samples.jsonl").read_text().splitlines())


class _NoPrefill(ScriptedBackend):
    supports_prefill = False


def test_a_backend_that_cannot_prefill_refuses_in_one_line(tmp_path):
    from vpo_harness.harness.core.config import RunConfig
    from vpo_harness.harness.eval.runner import run

    cfg = RunConfig.of(task="maze", model="scripted:x", limit=1, n=1, ks=(1,), progress=False, prefix="<answer>UP",
                       out=str(tmp_path / "r"))
    with pytest.raises(ValueError, match="cannot continue an assistant prefix") as err:
        run(cfg, backend=_NoPrefill())
    assert "\n" not in str(err.value)


def test_vpo_run_prefix_flag_end_to_end(tmp_path):
    from vpo_harness.harness.app.cli import main

    out = tmp_path / "run"
    rc = main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "-n", "2", "-m", "3",
               "--prefix", "<route_1>RIGHT", "--out", str(out), "--no-progress"])
    assert rc == 0
    rows = [json.loads(x) for x in Path(out, "samples.jsonl").read_text().splitlines()]
    assert all(r["text"].startswith("<route_1>RIGHT") and r["answers"][0].startswith("RIGHT") for r in rows)
