"""OpenAI-compatible backend against the loopback fake server (bench/loopback_openai.py)."""
from __future__ import annotations

import time
from collections import defaultdict

import pytest

from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from vpo_harness.harness.core.models.openai_server import OpenAIServerBackend
from vpo_harness.harness.core.models.prompting import render_messages
from vpo_harness.harness.core.seeding import derive_seed
from bench.loopback_openai import FakeOpenAIServer, FakeServerConfig

pytestmark = pytest.mark.timeout(60)

SAMPLING = SamplingConfig(temperature=0.7, top_p=0.95, max_tokens=8)


def make_requests(n_problems: int, k: int, run_seed: int = 1) -> list[GenRequest]:
    reqs = []
    for p in range(n_problems):
        pid = f"prob-{p}"
        reqs.append(GenRequest(
            problem_id=pid,
            messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": f"question {p}"}],
            chain_indices=tuple(range(k)),
            seeds=tuple(derive_seed(run_seed, pid, c) for c in range(k)),
        ))
    return reqs


def backend(srv: FakeOpenAIServer, **kw) -> OpenAIServerBackend:
    kw.setdefault("backoff_base", 0.005)
    kw.setdefault("backoff_max", 0.02)
    kw.setdefault("timeout", 5.0)
    return OpenAIServerBackend("fake-model", base_url=srv.base_url, **kw)


def test_per_chain_seeds_reach_server_and_texts_differ():
    reqs = make_requests(3, 4)
    with FakeOpenAIServer() as srv, backend(srv, use_n=False) as b:
        gens = list(b.generate(reqs, SAMPLING))
        again = {(g.problem_id, g.chain_index): g.text for g in b.generate(reqs, SAMPLING)}
    assert len(gens) == 12
    assert all(g.error is None and g.attempts == 1 for g in gens)
    sent_seeds = sorted(e.body["seed"] for e in srv.log[:12])
    assert sent_seeds == sorted(s for r in reqs for s in r.seeds)
    assert all("n" not in e.body for e in srv.log)
    for r in reqs:
        texts = [g.text for g in gens if g.problem_id == r.problem_id]
        assert len(set(texts)) == 4, texts  # k chains are not k copies
    # same seeds -> same texts
    assert {(g.problem_id, g.chain_index): g.text for g in gens} == again
    g0 = gens[0]
    assert g0.prompt_tokens == 4 and g0.completion_tokens == len(g0.text.split())
    assert g0.finish_reason in ("stop", "length") and g0.latency_s is not None
    body = srv.log[0].body
    assert body["temperature"] == 0.7 and body["top_p"] == 0.95 and body["max_tokens"] == 8


def test_use_n_sends_one_request_per_prompt():
    reqs = make_requests(2, 3)
    with FakeOpenAIServer() as srv, backend(srv) as b:  # use_n="auto"
        gens = list(b.generate(reqs, SAMPLING))
    assert len(srv.log) == 2
    assert all(e.body["n"] == 3 for e in srv.log)
    assert {e.body["seed"] for e in srv.log} == {r.seeds[0] for r in reqs}
    assert sorted((g.problem_id, g.chain_index) for g in gens) == [(f"prob-{p}", c) for p in range(2) for c in range(3)]
    for r in reqs:
        mine = [g for g in gens if g.problem_id == r.problem_id]
        assert len({g.text for g in mine}) == 3
        assert all(g.extra["group_n"] == 3 for g in mine)
        total = mine[0].extra["group_usage"]["completion_tokens"]
        assert total == sum(len(g.text.split()) for g in mine)
        # the server's total split over the chains (harness/core/models/token_counts.py)
        assert sum(g.completion_tokens for g in mine) == total
        assert all(g.completion_tokens == 8 for g in mine if g.finish_reason == "length")


@pytest.mark.parametrize("cfg", [FakeServerConfig(support_n=False), FakeServerConfig(ignore_n=True)],
                         ids=["rejects_n", "ignores_n"])
def test_auto_n_falls_back_to_per_chain_requests(cfg):
    reqs = make_requests(3, 3)
    with FakeOpenAIServer(cfg) as srv, backend(srv, concurrency=1) as b:
        gens = list(b.generate(reqs, SAMPLING))
        assert b._n_ok is False
    assert len(gens) == 9 and all(g.error is None for g in gens)
    per_chain = [e for e in srv.log if "n" not in e.body]
    assert sorted(e.body["seed"] for e in per_chain) == sorted(s for r in reqs for s in r.seeds)
    assert all(g.extra["seed"] == dict(zip(r.chain_indices, r.seeds))[g.chain_index]
               for r in reqs for g in gens if g.problem_id == r.problem_id)


def test_use_n_true_on_server_without_n_is_an_error_not_an_exception():
    with FakeOpenAIServer(FakeServerConfig(support_n=False)) as srv, backend(srv, use_n=True) as b:
        gens = list(b.generate(make_requests(1, 2), SAMPLING))
    assert [g.chain_index for g in sorted(gens, key=lambda g: g.chain_index)] == [0, 1]
    assert all(g.error and "400" in g.error and g.attempts == 1 and g.text == "" for g in gens)
    assert len(srv.log) == 1  # 400 is not retried


def test_completions_mode_renders_messages():
    reqs = make_requests(1, 2)
    with FakeOpenAIServer() as srv, backend(srv, mode="completions", use_n=False) as b:
        gens = list(b.generate(reqs, SAMPLING))
    assert all(e.path == "/v1/completions" for e in srv.log)
    assert srv.log[0].body["prompt"] == render_messages(reqs[0].messages)
    assert all(g.error is None and g.text for g in gens)


def test_stop_strings_are_sent():
    sampling = SamplingConfig(max_tokens=8, stop=("kilo", "\n\n"))
    with FakeOpenAIServer() as srv, backend(srv, use_n=False) as b:
        gens = list(b.generate(make_requests(4, 4), sampling))
    assert srv.log[0].body["stop"] == ["kilo", "\n\n"]
    assert not any("kilo" in g.text for g in gens)


def test_faults_are_retried_and_all_chains_complete():
    # ~25% faults over ~270 requests: every fault kind shows up (P(one missing) ~ 1e-4)
    cfg = FakeServerConfig(fault_rate=0.25, hang_s=0.6, rng_seed=3)
    reqs = make_requests(50, 4)
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, max_retries=10, timeout=0.3, concurrency=16) as b:
        gens = list(b.generate(reqs, SAMPLING))
        stats = dict(b.stats)
    assert sorted((g.problem_id, g.chain_index) for g in gens) == sorted(
        (r.problem_id, c) for r in reqs for c in r.chain_indices)
    outcomes = srv.outcomes()
    assert set(outcomes) == {"ok", "500", "429", "timeout", "disconnect", "garbage", "shape"}, outcomes
    # a request sent on a socket the server already dropped never shows up in its log
    assert sum(g.attempts for g in gens) == stats["requests"] >= len(srv.log) >= len(gens)
    assert stats["retries"] == sum(g.attempts - 1 for g in gens) > 0
    assert [g for g in gens if g.error] == []  # 11 tries at 25% faults: P(any chain fails) ~ 5e-5
    assert any(g.attempts > 1 and g.text for g in gens)
    for r in reqs:  # retried chains still got their own seed: texts differ per chain
        assert len({g.text for g in gens if g.problem_id == r.problem_id}) == 4


def test_exhausted_retries_become_error_generations():
    cfg = FakeServerConfig(fault_rate=0.7, faults=("500", "429", "garbage", "shape", "disconnect"), rng_seed=5)
    reqs = make_requests(10, 4)
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, max_retries=1) as b:
        gens = list(b.generate(reqs, SAMPLING))
    assert len(gens) == 40
    by_seed = defaultdict(list)
    for e in srv.log:
        by_seed[e.body["seed"]].append(e.outcome)
    errors = [g for g in gens if g.error]
    assert 0 < len(errors) < 40
    for g in gens:
        seen = by_seed[g.extra["seed"]]
        assert 1 <= len(seen) <= g.attempts  # see test above: a dead keep-alive socket eats a request
        if g.error:
            assert g.text == "" and g.attempts == 2 and "ok" not in seen
        else:
            assert seen[-1] == "ok" and g.text


def test_yields_incrementally():
    cfg = FakeServerConfig(delay_s=0.15)
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, concurrency=1) as b:
        t0 = time.perf_counter()
        times = [time.perf_counter() - t0 for _ in b.generate(make_requests(1, 4), SAMPLING)]
    assert len(times) == 4
    assert times[0] < times[-1] - 0.3  # the first chain came out long before the last


def test_early_stop_cancels_and_backend_stays_usable():
    cfg = FakeServerConfig(delay_s=0.05)
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, concurrency=2) as b:
        it = b.generate(make_requests(10, 4), SAMPLING)
        next(it)
        it.close()
        time.sleep(0.3)
        sent = len(srv.log)
        assert sent < 40
        gens = list(b.generate(make_requests(1, 2), SAMPLING))
        assert len(gens) == 2 and all(g.error is None for g in gens)


def test_describe_reproduces_without_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    with FakeOpenAIServer() as srv, backend(srv, mode="completions", concurrency=4) as b:
        d = b.describe()
    assert d["backend"] == "openai" and d["model"] == "fake-model" and d["base_url"] == srv.base_url
    assert d["args"]["mode"] == "completions" and d["args"]["concurrency"] == 4
    import httpx

    assert d["library"] == {"client": "httpx", "version": httpx.__version__}
    assert "sk-secret" not in repr(d)


def test_bad_options_rejected():
    with pytest.raises(ValueError, match="mode"):
        OpenAIServerBackend("m", "http://127.0.0.1:1/v1", mode="embeddings")
    with pytest.raises(ValueError, match="use_n"):
        OpenAIServerBackend("m", "http://127.0.0.1:1/v1", use_n="sometimes")


def test_completions_mode_uses_a_local_chat_template(tmp_path):
    from tests.fakes.tiny_llama import save_tiny_llama

    folder = save_tiny_llama(tmp_path / "tok")
    reqs = make_requests(1, 1)
    with FakeOpenAIServer() as srv, backend(srv, mode="completions", tokenizer=str(folder)) as b:
        gens = list(b.generate(reqs, SAMPLING))
    prompt = srv.log[0].body["prompt"]
    assert prompt.startswith("<|im_start|>system\nbe brief<|im_end|>") and prompt.endswith("<|im_start|>assistant\n")
    assert gens[0].error is None


def test_mismatched_seeds_raise_before_any_request():
    bad = [make_requests(1, 2)[0], GenRequest("x", [{"role": "user", "content": "q"}], (0, 1), (5,))]
    with FakeOpenAIServer() as srv, backend(srv) as b:
        with pytest.raises(ValueError, match="seeds"):
            list(b.generate(bad, SAMPLING))
        time.sleep(0.1)
        assert srv.log == []


def test_null_content_is_an_error_and_retried():
    """A 200 with ``content: null`` was stored as a successful empty answer (a silent zero)."""
    reqs = make_requests(1, 1)
    cfg = FakeServerConfig(fault_rate=1.0, faults=("null",))
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, max_retries=2) as b:
        gens = list(b.generate(reqs, SAMPLING))
    assert len(gens) == 1 and gens[0].error and "null" in gens[0].error
    assert gens[0].attempts == 3 and srv.outcomes() == {"null": 3}  # retried like the other faults
    cfg = FakeServerConfig(fault_rate=1.0, faults=("null",))
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, mode="completions", max_retries=0) as b:
        assert "null" in (list(b.generate(reqs, SAMPLING))[0].error or "")


def test_trickling_server_is_cut_by_the_request_deadline():
    """One byte every 0.05 s never trips the per-read timeout; the reply would take ~15 s. The wall
    deadline ends each attempt after 0.5 s and the retry (a good server reply) succeeds."""
    reqs = make_requests(1, 1)
    cfg = FakeServerConfig(fault_rate=1.0, faults=("trickle",), trickle_s=0.05)
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, timeout=2.0, deadline=0.5, max_retries=1) as b:
        t0 = time.perf_counter()
        gens = list(b.generate(reqs, SAMPLING))
        took = time.perf_counter() - t0
    assert gens[0].error and "deadline" in gens[0].error and gens[0].attempts == 2
    assert took < 5.0, took
    # a trickle that ends within the deadline is a normal reply
    cfg = FakeServerConfig(fault_rate=1.0, faults=("trickle",), trickle_s=0.0005)
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, timeout=2.0, deadline=10.0) as b:
        g = list(b.generate(reqs, SAMPLING))[0]
    assert g.error is None and g.text


def _dead_url() -> str:
    from vpo_harness.search.server_process import free_port  # a port nothing listens on

    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.mark.parametrize("connect_retries", [0, 1, 3])
def test_connection_refused_fails_fast_with_one_error_naming_the_url(connect_retries):
    """No server: a few quick connect retries (not max_retries with backoff), then ServerUnreachable
    out of generate naming the URL, the reason and the attempts made (counted by the backend)."""
    from vpo_harness.harness.core.models.openai_server import ServerUnreachable

    url = _dead_url()
    b = OpenAIServerBackend("m", base_url=url, use_n=False, max_retries=6, backoff_base=0.01,
                            connect_retries=connect_retries, connect_backoff=0.0)
    try:
        with pytest.raises(ServerUnreachable) as err:
            list(b.generate(make_requests(1, 1), SAMPLING))
    finally:
        b.close()
    msg = str(err.value)
    n = connect_retries + 1
    assert url in msg and "connection refused" in msg and f"POST {url}/chat/completions" in msg
    assert f"{n} attempt{'s' if n > 1 else ''} in" in msg and "--base-url" in msg and "\n" not in msg
    assert b.stats["requests"] == n and b.stats["retries"] == 0


def test_timeouts_keep_their_retries_and_end_as_error_chains():
    """A server that accepts but never answers in time is not 'unreachable': max_retries with
    backoff, then an error chain (the run goes on), as before."""
    cfg = FakeServerConfig(fault_rate=1.0, faults=("timeout",), hang_s=0.6)
    with FakeOpenAIServer(cfg) as srv, backend(srv, use_n=False, timeout=0.2, max_retries=2) as b:
        gens = list(b.generate(make_requests(1, 1), SAMPLING))
    assert len(gens) == 1 and gens[0].error and gens[0].attempts == 3 and b.stats["retries"] == 2


def test_a_dead_server_in_a_fleet_is_not_unreachable():
    """With a live server beside it, refused connections are failed over, not the end of the run."""
    with FakeOpenAIServer() as srv:
        b = OpenAIServerBackend("m", base_url=f"{_dead_url()},{srv.base_url}", use_n=False, eject_after=1,
                                connect_retries=0, connect_backoff=0.0, timeout=5.0)
        try:
            gens = list(b.generate(make_requests(2, 3), SAMPLING))
        finally:
            b.close()
    assert len(gens) == 6 and all(g.error is None for g in gens)


def test_generate_one_uses_the_same_request_and_merges_extra_body():
    """The evolve loop's entry point: awaited in the caller's loop, messages sent as given, request
    fields from extra_body merged over the backend's own (chat template args included)."""
    import asyncio

    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "partial"}]
    sampling = SamplingConfig(temperature=0.5, top_p=0.9, max_tokens=8, chat_template_args=(("x", 1),))
    with FakeOpenAIServer() as srv:
        b = backend(srv, use_n=False, extra_body={"top_k": 5})

        async def go():
            try:
                return await b.generate_one(msgs, 17, sampling, extra_body={"continue_final_message": True})
            finally:
                await b.aclose()

        gen = asyncio.run(go())
    body = srv.log[-1].body
    assert gen.error is None and gen.text and gen.extra["seed"] == 17
    assert body["messages"] == msgs and body["seed"] == 17 and body["top_k"] == 5
    assert body["continue_final_message"] is True and body["chat_template_kwargs"] == {"x": 1}
