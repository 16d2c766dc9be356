"""The vllm adapter against a fake ``vllm`` module (tests/fakes/fake_vllm.py): no vLLM needed."""
from __future__ import annotations

import importlib
import sys

import pytest

from vpo_harness.harness.core.models import load_backend
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from vpo_harness.harness.core.seeding import derive_seed
from tests.fakes.fake_vllm import FakeTokenizer, make_fake_vllm

SAMPLING = SamplingConfig(temperature=0.8, top_p=0.9, max_tokens=6, stop=("z",))


@pytest.fixture
def fake_vllm(monkeypatch):
    mod = make_fake_vllm()
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod


def reqs(n=2, k=3, run_seed=3):
    return [GenRequest(f"p{p}", [{"role": "user", "content": f"q{p}"}], tuple(range(k)),
                       tuple(derive_seed(run_seed, f"p{p}", c) for c in range(k))) for p in range(n)]


def test_module_imports_without_vllm(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    mod = importlib.reload(importlib.import_module("vpo_harness.harness.core.models.vllm_offline"))
    with pytest.raises(ImportError, match=r"GPU: pip install .vpo-harness\[vllm\].*CPU: .*setup_vllm_cpu.sh"):
        mod.VLLMOfflineBackend("some/model")


def test_model_args_pass_through(fake_vllm):
    b = load_backend("vllm:org/model", model_args="tensor_parallel_size=2,data_parallel_size=1,"
                     "gpu_memory_utilization=0.8,max_model_len=4096,dtype=bfloat16,enforce_eager=true,chunk_size=4")
    llm = fake_vllm.LLM.instances[-1]
    assert llm.model == "org/model"
    assert llm.kwargs == {"tensor_parallel_size": 2, "data_parallel_size": 1, "gpu_memory_utilization": 0.8,
                          "max_model_len": 4096, "dtype": "bfloat16", "enforce_eager": True}
    assert b.chunk_size == 4
    d = b.describe()
    assert d["backend"] == "vllm" and d["path"] == "org/model" and d["library"]["vllm"] == "0.0.fake"
    assert d["args"]["tensor_parallel_size"] == 2 and d["args"]["chunk_size"] == 4


def test_sampling_params_seeds_prompts_and_outputs(fake_vllm):
    b = load_backend("vllm:org/m", model_args={"chunk_size": 100})
    rs = reqs()
    gens = list(b.generate(rs, SAMPLING))
    llm = fake_vllm.LLM.instances[-1]
    assert len(llm.calls) == 1
    prompts, params = llm.calls[0]
    assert len(prompts) == len(params) == 6
    assert [p.seed for p in params] == [s for r in rs for s in r.seeds]
    for p in params:
        assert (p.n, p.temperature, p.top_p, p.max_tokens, p.stop) == (1, 0.8, 0.9, 6, ["z"])
    # chat template rendered, then passed as token ids without an extra BOS
    tok = FakeTokenizer()
    expected = tok(tok.apply_chat_template(rs[0].messages), add_special_tokens=False)["input_ids"]
    assert prompts[0] == {"prompt_token_ids": expected}
    assert [(g.problem_id, g.chain_index, g.extra["seed"]) for g in gens] == [
        (r.problem_id, c, s) for r in rs for c, s in zip(r.chain_indices, r.seeds)]
    for g in gens:
        assert g.error is None and g.text and "z" not in g.text
        assert g.prompt_tokens == len(expected) and g.completion_tokens == len(g.text)
        assert g.finish_reason in ("stop", "length")
    assert len({g.text for g in gens if g.problem_id == "p0"}) == 3


def test_plain_prompts_without_template(fake_vllm):
    b = load_backend("vllm:org/m", model_args={"use_chat_template": False})
    list(b.generate(reqs(1, 1), SAMPLING))
    prompts, _ = fake_vllm.LLM.instances[-1].calls[0]
    assert prompts == ["q0\n\n"]


def test_chunks_yield_incrementally(fake_vllm):
    b = load_backend("vllm:org/m", model_args={"chunk_size": 2})
    llm = fake_vllm.LLM.instances[-1]
    it = b.generate(reqs(2, 3), SAMPLING)
    first = next(it)
    assert first.chain_index == 0 and len(llm.calls) == 1
    assert len(list(it)) == 5 and len(llm.calls) == 3


def test_failing_prompt_is_isolated(fake_vllm):
    b = load_backend("vllm:org/m")
    rs = reqs(2, 2) + [GenRequest("bad", [{"role": "user", "content": "BOOM"}], (0, 1), (1, 2))]
    gens = list(b.generate(rs, SAMPLING))
    assert len(gens) == 6
    bad = [g for g in gens if g.problem_id == "bad"]
    assert all(g.error and "too long" in g.error and g.text == "" for g in bad)
    assert all(g.error is None and g.text for g in gens if g.problem_id != "bad")


def test_same_seed_same_text_across_chunking(fake_vllm):
    a = {(g.problem_id, g.chain_index): g.text for g in load_backend("vllm:org/m", model_args={"chunk_size": 1}).generate(reqs(), SAMPLING)}
    b = {(g.problem_id, g.chain_index): g.text for g in load_backend("vllm:org/m", model_args={"chunk_size": 64}).generate(reqs(), SAMPLING)}
    assert a == b


def test_zoo_names_resolve_for_vllm(fake_vllm, monkeypatch, tmp_path):
    from vpo_harness.harness.core.models import zoo

    monkeypatch.setitem(zoo.ZOO, "tiny-test", zoo.ZooEntry("tiny-test", "t", lambda: tmp_path))
    load_backend("vllm:tiny-test")
    assert fake_vllm.LLM.instances[-1].model == str(tmp_path)


def test_unknown_vllm_model_arg_is_one_line_listing_engine_args(fake_vllm):
    """vllm.LLM(**args) raised a TypeError traceback for a misspelt engine argument."""
    import dataclasses

    from vpo_harness.harness.core.models import load_backend

    @dataclasses.dataclass
    class EngineArgs:  # the real one is a dataclass of every engine option
        model: str = ""
        tensor_parallel_size: int = 1
        gpu_memory_utilization: float = 0.9

    fake_vllm.EngineArgs = EngineArgs
    with pytest.raises(ValueError, match=r"unknown --model-args tensor_paralel_size for the vllm backend; "
                                         r"valid: .*gpu_memory_utilization.*tensor_parallel_size"):
        load_backend("vllm:some/model", model_args="tensor_paralel_size=2")
    load_backend("vllm:some/model", model_args="tensor_parallel_size=2,chunk_size=4")  # real names pass
