"""HF backend on the tiny random Llama from tests/fakes/tiny_llama.py (seconds on CPU)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from vpo_harness.harness.core.models import load_backend
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from vpo_harness.harness.core.models.hf import HFBackend, RowSampler
from vpo_harness.harness.core.seeding import derive_seed
from tests.fakes.tiny_llama import build_tiny_llama, one_torch_thread, tiny_llama_dir  # noqa: F401 (fixtures)

pytestmark = pytest.mark.timeout(180)

SAMPLING = SamplingConfig(temperature=1.0, top_p=1.0, max_tokens=10)


@pytest.fixture(scope="module")
def backend(tiny_llama_dir):
    return HFBackend(str(tiny_llama_dir), batch_size=4, device="cpu")


def reqs(n_problems=3, k=3, run_seed=7):
    out = []
    for p in range(n_problems):
        pid = f"maze-{p}"
        out.append(GenRequest(pid, [{"role": "user", "content": "find the exit " * (p + 1)}],
                              tuple(range(k)), tuple(derive_seed(run_seed, pid, c) for c in range(k))))
    return out


def texts(gens):
    return {(g.problem_id, g.chain_index): g.text for g in gens}


def test_reproducible_and_independent_of_batching(backend):
    rs = reqs()
    first = list(backend.generate(rs, SAMPLING))
    assert len(first) == 9 and all(g.error is None for g in first)
    assert texts(first) == texts(backend.generate(rs, SAMPLING))
    backend.batch_size = 1
    try:
        one_by_one = texts(backend.generate(rs[::-1], SAMPLING))
    finally:
        backend.batch_size = 4
    assert one_by_one == texts(first)
    # a single chain asked for alone (a resume) gives the same text as inside its group
    r = rs[1]
    alone = list(backend.generate([GenRequest(r.problem_id, r.messages, (2,), (r.seeds[2],))], SAMPLING))
    assert alone[0].text == texts(first)[(r.problem_id, 2)]


def test_different_seeds_differ(backend):
    gens = list(backend.generate(reqs(2, 4), SAMPLING))
    for pid in ("maze-0", "maze-1"):
        assert len({g.text for g in gens if g.problem_id == pid}) == 4
    other = texts(backend.generate(reqs(2, 4, run_seed=8), SAMPLING))
    assert other != texts(gens)


def test_token_counts_and_left_padding(backend):
    rs = reqs(3, 2)
    gens = list(backend.generate(rs, SAMPLING))  # 6 rows, batch 4: a batch mixes prompt lengths
    tok = backend.tokenizer
    for r in rs:
        rendered = tok.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True)
        n_prompt = len(tok(rendered, add_special_tokens=False)["input_ids"])
        for g in (g for g in gens if g.problem_id == r.problem_id):
            assert g.prompt_tokens == n_prompt
            assert 1 <= g.completion_tokens <= SAMPLING.max_tokens
            assert g.finish_reason in ("stop", "length")
            if g.finish_reason == "length":
                assert g.completion_tokens == SAMPLING.max_tokens
            assert g.extra["seed"] in r.seeds and g.latency_s > 0
    assert len({g.prompt_tokens for g in gens}) == 3


def test_tiny_top_p_is_greedy(backend):
    greedy = list(backend.generate(reqs(1, 3), SamplingConfig(temperature=0.0, max_tokens=8)))
    nucleus = list(backend.generate(reqs(1, 3), SamplingConfig(temperature=1.0, top_p=1e-9, max_tokens=8)))
    assert len({g.text for g in greedy}) == 1
    assert {g.text for g in nucleus} == {g.text for g in greedy}


def test_stop_strings_trimmed(backend):
    plain = texts(backend.generate(reqs(3, 3), SAMPLING))
    # pick a character that occurs mid-way through some sample as the stop string
    sample = next(t for t in plain.values() if len(t) > 4)
    stop = sample[len(sample) // 2]
    stopped = list(backend.generate(reqs(3, 3), SamplingConfig(temperature=1.0, max_tokens=10, stop=(stop,))))
    hits = 0
    for g in stopped:
        full = plain[(g.problem_id, g.chain_index)]
        assert stop not in g.text
        if stop in full:
            hits += 1
            assert g.text == full[: full.index(stop)] and g.finish_reason == "stop"
            assert g.completion_tokens <= SAMPLING.max_tokens
        else:
            assert g.text == full
    assert hits >= 1


def test_yields_each_batch_as_it_finishes(backend, monkeypatch):
    calls = []
    real = backend._generate_batch

    def spy(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(backend, "_generate_batch", spy)
    it = backend.generate(reqs(3, 3), SAMPLING)  # 9 rows, batch 4 -> 3 batches
    next(it)
    assert len(calls) == 1
    rest = list(it)
    assert len(rest) == 8 and len(calls) == 3


def test_batch_failure_becomes_error_generations(backend, monkeypatch):
    def boom(*a, **kw):
        raise RuntimeError("out of memory (simulated)")

    monkeypatch.setattr(backend, "_generate_batch", boom)
    gens = list(backend.generate(reqs(2, 3), SAMPLING))
    assert len(gens) == 6 and all(g.error and "simulated" in g.error and g.text == "" for g in gens)


def test_finish_row_counts_up_to_eos(backend):
    tok = backend.tokenizer
    eos, pad = tok.eos_token_id, tok.pad_token_id
    word = tok("maze", add_special_tokens=False)["input_ids"]
    text, n, finish = backend._finish_row(word + [eos] + [pad] * 3, SAMPLING)
    assert (text, n, finish) == ("maze", len(word) + 1, "stop")
    text, n, finish = backend._finish_row(word + [pad] * 2, SamplingConfig(max_tokens=len(word) + 2))
    assert (text, n, finish) == ("maze", len(word), "stop")


def test_row_sampler_matches_distribution_and_top_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    counts = torch.zeros(4)
    for s in range(2000):
        out = RowSampler([s], 1.0, 1.0, "cpu")(None, logits.clone())
        assert torch.isinf(out).sum() == 3
        counts[out.argmax()] += 1
    freq = counts / counts.sum()
    assert torch.allclose(freq, torch.tensor([0.5, 0.3, 0.15, 0.05]), atol=0.04), freq
    # top_p=0.7 keeps {0.5, 0.3}: the two rare tokens never appear
    picks = {int(RowSampler([s], 1.0, 0.7, "cpu")(None, logits.clone()).argmax()) for s in range(300)}
    assert picks == {0, 1}
    # rows are independent: row 1's draw depends only on its own seed
    two = RowSampler([5, 9], 1.0, 1.0, "cpu")(None, logits.repeat(2, 1)).argmax(-1)
    assert int(two[1]) == int(RowSampler([9], 1.0, 1.0, "cpu")(None, logits.clone()).argmax())


def test_load_backend_hf_with_args_and_describe(tiny_llama_dir):
    b = load_backend(f"hf:{tiny_llama_dir}", model_args="batch_size=2,dtype=float32,device=cpu")
    assert isinstance(b, HFBackend) and b.batch_size == 2 and b.model.dtype == torch.float32
    d = b.describe()
    assert d["backend"] == "hf" and d["path"] == str(tiny_llama_dir.resolve())
    assert d["args"]["batch_size"] == 2 and "transformers" in d["library"] and "torch" in d["library"]
    with pytest.raises(ValueError, match="dtype"):
        HFBackend(str(tiny_llama_dir), dtype="float13")


def test_zoo_names_resolve_for_hf(tiny_llama_dir, monkeypatch):
    from vpo_harness.harness.core.models import zoo

    monkeypatch.setitem(zoo.ZOO, "tiny-test", zoo.ZooEntry("tiny-test", "test", lambda: tiny_llama_dir))
    b = load_backend("hf:tiny-test", model_args={"device": "cpu"})
    assert b.path == str(tiny_llama_dir) and b.describe()["model"] == "tiny-test"


def test_from_model_wraps_in_memory_policy():
    model, tok = build_tiny_llama(seed=1)
    b = HFBackend.from_model(model, tok, name="policy", batch_size=3)
    gens = list(b.generate(reqs(1, 2), SAMPLING))
    assert len(gens) == 2 and all(g.completion_tokens for g in gens)
    assert b.describe()["model"] == "policy"


def test_checkpoint_generation_defaults_do_not_leak_in():
    model, tok = build_tiny_llama(seed=0)
    b = HFBackend.from_model(model, tok)
    before = texts(b.generate(reqs(1, 3), SAMPLING))
    saved = model.generation_config
    model.generation_config.do_sample = True
    model.generation_config.top_k = 1
    model.generation_config.repetition_penalty = 5.0
    model.generation_config.no_repeat_ngram_size = 1
    after = texts(b.generate(reqs(1, 3), SAMPLING))
    assert after == before
    assert model.generation_config is saved and saved.repetition_penalty == 5.0  # restored untouched


def test_a_stop_string_the_tokenizer_cannot_take_is_named_before_any_batch(monkeypatch) -> None:
    """`vpo serve` asks the hf backend first: the stop string transformers' stop-string criteria
    refuse is named by its index; a list that passed is not checked again."""
    from types import SimpleNamespace

    from transformers.generation import stopping_criteria

    from vpo_harness.harness.core.models.hf import HFBackend

    built: list[str] = []

    class Criteria:
        def __init__(self, tokenizer, stops):
            built.extend(stops)
            if "\u2603" in stops[0]:
                raise ValueError("no token sequence for it")

        def __call__(self, ids, scores):
            return None

    monkeypatch.setattr(stopping_criteria, "StopStringCriteria", Criteria)
    stub = SimpleNamespace(tokenizer=None, _stops_ok=set())
    HFBackend.check_stop_strings(stub, ("ok", "</s>"))
    HFBackend.check_stop_strings(stub, ("ok", "</s>"))
    assert built == ["ok", "</s>"]  # remembered
    with pytest.raises(ValueError, match=r"stop string 1 \('\\u2603'\) cannot be used .*no token sequence"):
        HFBackend.check_stop_strings(stub, ("ok", "\u2603"))
