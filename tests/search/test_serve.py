"""`vpo serve`: the OpenAI-compatible protocol (through the real openai client), batching of
concurrent requests on one model instance, and the managed child process of `vpo evolve`."""
from __future__ import annotations

import concurrent.futures as cf
import os
import time

import openai
import pytest

from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from vpo_harness.search.serve import ModelServer
from vpo_harness.harness.core.paths import child_pythonpath
from tests.fakes.scripted_backend import ScriptedBackend


def _echo(req: GenRequest, chain: int, seed: int) -> str:
    return f"{req.messages[-1]['content']}|seed={seed}|STOPHERE tail"


@pytest.fixture()
def served():
    backend = ScriptedBackend(_echo)
    srv = ModelServer(backend, "scripted-model", max_batch=64).start_background()
    client = openai.OpenAI(base_url=srv.url, api_key="x", max_retries=0, timeout=30)
    yield srv, backend, client
    client.close()
    srv.shutdown()


def test_models_and_chat(served) -> None:
    srv, backend, client = served
    assert [m.id for m in client.models.list().data] == ["scripted-model"]
    r = client.chat.completions.create(model="scripted-model", messages=[{"role": "user", "content": "hi"}],
                                       n=3, seed=7, temperature=0.5, max_tokens=9)
    texts = [c.message.content for c in r.choices]
    assert len(texts) == 3 and texts[0] == "hi|seed=7|STOPHERE tail"
    assert len(set(texts)) == 3  # each choice has its own seed
    assert r.usage.completion_tokens == sum(len(t.split()) for t in texts)
    reqs, sampling = backend.calls[-1]
    assert sampling == SamplingConfig(temperature=0.5, top_p=1.0, max_tokens=9)
    # same seed, same answer
    r2 = client.chat.completions.create(model="scripted-model", messages=[{"role": "user", "content": "hi"}], n=3, seed=7)
    assert [c.message.content for c in r2.choices] == texts


def test_completions_and_stop(served) -> None:
    srv, backend, client = served
    r = client.completions.create(model="scripted-model", prompt="raw text", seed=3, max_tokens=5, stop=["STOP"])
    assert r.choices[0].text.startswith("raw text|seed=3")
    assert backend.calls[-1][1].stop == ("STOP",)
    assert backend.calls[-1][0][0].messages == [{"role": "user", "content": "raw text"}]


def test_bad_requests_are_400(served) -> None:
    srv, backend, client = served
    with pytest.raises(openai.BadRequestError, match="messages"):
        client.chat.completions.create(model="scripted-model", messages=[])
    with pytest.raises(openai.BadRequestError, match="'n'"):
        client.chat.completions.create(model="scripted-model", messages=[{"role": "user", "content": "x"}], n=0)
    with pytest.raises(openai.NotFoundError, match="no route POST /v1/embeddings"):
        client.embeddings.create(model="scripted-model", input="x")


def test_concurrent_requests_share_batches(served) -> None:
    srv, backend, client = served
    n0 = len(backend.calls)
    slow = ScriptedBackend(lambda r, c, s: (time.sleep(0.05), "ok")[1])
    srv.batcher.backend = slow  # a backend that takes time, so requests queue up behind it
    with cf.ThreadPoolExecutor(16) as ex:
        outs = list(ex.map(lambda i: client.chat.completions.create(
            model="scripted-model", messages=[{"role": "user", "content": str(i)}], seed=i).choices[0].message.content, range(32)))
    assert outs == ["ok"] * 32
    assert len(slow.calls) < 32  # fewer backend calls than requests: concurrent requests were batched
    assert sum(len(reqs) for reqs, _ in slow.calls) == 32
    assert len(backend.calls) == n0


@pytest.mark.integration
def test_managed_server_real_checkpoint_and_cleanup() -> None:
    """`vpo evolve`'s child: the bundled maze policy served on a free loopback port, seeded sampling,
    and the process group gone after stop()."""
    from vpo_harness.search.server_process import ManagedServer

    with ManagedServer("hf:maze-tiny-vpo") as srv:
        pid = srv.proc.pid
        client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0, timeout=120)
        assert client.models.list().data[0].id == "hf:maze-tiny-vpo"
        from vpo_harness.benchmarks import get_task

        t = get_task("maze")
        msgs = t.prompt(t.load("test", limit=1)[0], style="compact")
        a = client.chat.completions.create(model=srv.served_name, messages=msgs, seed=11, max_tokens=40, temperature=0.7, n=2)
        b = client.chat.completions.create(model=srv.served_name, messages=msgs, seed=11, max_tokens=40, temperature=0.7, n=2)
        assert [c.message.content for c in a.choices] == [c.message.content for c in b.choices]
        assert t.parse(a.choices[0].message.content)[0] is not None
        client.close()
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


@pytest.mark.integration
def test_managed_server_reports_a_failed_load(tmp_path) -> None:
    from vpo_harness.search.server_process import ManagedServer

    t0 = time.time()
    with pytest.raises(RuntimeError, match="exited with code .* while loading: vpo serve: error: .*no-such-model"):
        ManagedServer(f"hf:{tmp_path / 'no-such-model'}", startup_timeout_s=120).start()
    assert time.time() - t0 < 120


def _children(pid: int) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d))
    return out


def _gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            if state == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.integration
@pytest.mark.parametrize("how", ["ctrl-c", "kill-9"])
def test_evolve_stops_its_server(tmp_path, how: str) -> None:
    """The `vpo serve` child of `vpo evolve` ends with it: on Ctrl-C (clean stop) and on kill -9
    (parent-death signal)."""
    import signal
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "evo"
    cmd = [sys.executable, "-m", "vpo_harness.harness.app.cli", "evolve", "--task", "maze", "--model", "mock:moves",
           "--model-args", "latency_s=0.05", "--limit", "2", "--iterations", "2000", "--no-baseline",
           "--no-progress", "--out", str(out)]
    # stderr to a file, not a pipe nobody reads: a full pipe would block the child's writes and with
    # them its Ctrl-C handling
    err_log = open(tmp_path / "evolve.stderr", "wb")
    # a test run started in the background (`pytest &`) inherits SIGINT ignored, and so would the child:
    # give it the default disposition, as an interactive `vpo evolve` has
    proc = subprocess.Popen(cmd, cwd=repo, env={**os.environ, "PYTHONPATH": child_pythonpath()},
                            stdout=subprocess.DEVNULL, stderr=err_log,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and not ((out / "samples.jsonl").exists() and (out / "samples.jsonl").stat().st_size):
        time.sleep(0.1)
    servers = [c for c in _children(proc.pid) if b"vpo_harness.search.serve" in open(f"/proc/{c}/cmdline", "rb").read()]
    assert len(servers) == 1
    if how == "ctrl-c":
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("vpo evolve ignored Ctrl-C; its stderr ends: "
                                 + (tmp_path / "evolve.stderr").read_text(errors="replace")[-2000:]) from None
        assert proc.returncode != 0
    else:
        proc.kill()
        proc.wait()
    err_log.close()
    assert _gone(servers[0]), "vpo serve child still running"


class _Gated(ScriptedBackend):
    """Holds its first generate call until ``gate`` is set, so the jobs queued meanwhile form one batch."""

    def __init__(self, inner=None, **kw):
        super().__init__(_echo, **kw)
        import threading

        self.inner, self.gate, self.entered = inner, threading.Event(), threading.Event()
        self.context_len = getattr(inner, "context_len", None)

    def generate(self, requests, sampling):
        if not self.calls:
            self.entered.set()
            assert self.gate.wait(60)
        if self.inner is None:
            yield from super().generate(requests, sampling)
            return
        self.calls.append((list(requests), sampling))
        yield from self.inner.generate(requests, sampling)


def _job(content: str, seed: int, n: int = 1, max_tokens: int = 9):
    from vpo_harness.search.serve_protocol import parse_body

    return parse_body({"model": "m", "messages": [{"role": "user", "content": content}], "seed": seed, "n": n,
                       "max_tokens": max_tokens}, "chat", model_name="m")


def _batched(backend, jobs, first, wait_s: float = 300):
    """Run ``first`` alone (held at the gate), then ``jobs`` as the next batch; their results."""
    from vpo_harness.search.serve_batcher import Batcher

    b = Batcher(backend, max_batch=64)
    try:
        f0 = b.submit(first)
        assert backend.entered.wait(60)
        futures = [b.submit(j) for j in jobs]
        backend.gate.set()
        f0.result(timeout=wait_s)
        return [f.result() if f.exception(timeout=wait_s) is None else f.exception() for f in futures]
    finally:
        b.close()


def test_a_failing_request_fails_alone() -> None:
    """A backend that raises for one prompt: its batch is re-run job by job, so only that job fails."""
    class Picky(_Gated):
        def generate(self, requests, sampling):
            if any(r.messages[-1]["content"] == "bad" for r in requests):
                self.calls.append((list(requests), sampling))
                raise ValueError("the prompt is 900 tokens, longer than the context")
            yield from super().generate(requests, sampling)

    backend = Picky()
    good, bad, good2 = _batched(backend, [_job("a", 1), _job("bad", 2), _job("c", 3, n=2)], first=_job("x", 0, max_tokens=3),
                                wait_s=30)
    assert good == [{"text": "a|seed=1|STOPHERE tail", "prompt_tokens": 1, "completion_tokens": 2, "finish_reason": "stop"}]
    assert isinstance(bad, ValueError) and "longer than the context" in str(bad)
    assert [r["text"] for r in good2][0] == "c|seed=3|STOPHERE tail" and len(good2) == 2
    assert len(backend.calls[1][0]) == 3  # the three were one batch before the split


@pytest.mark.integration
def test_hf_replies_do_not_depend_on_batch_mates() -> None:
    """The bundled checkpoint through the batcher: a request's choices are the same alone and batched
    with other prompts of other lengths (left padding), and equal seeds give equal texts."""
    import torch

    from vpo_harness.benchmarks import get_task
    from vpo_harness.harness.core.models import load_backend
    from vpo_harness.search.serve import default_threads

    threads = torch.get_num_threads()
    torch.set_num_threads(default_threads())
    try:
        hf = load_backend("hf:maze-tiny-vpo")
        task = get_task("maze")
        prompts = [task.prompt(p, style="compact")[-1]["content"] for p in task.load("test", limit=3)]
        prompts[1] += " Answer with the moves only, please."  # batch mates of other lengths: left padding
        prompts[2] = prompts[2][: len(prompts[2]) // 2]
        alone = _batched(_Gated(hf), [_job(prompts[0], 11, n=2, max_tokens=24)], first=_job("hi", 0, max_tokens=2))[0]
        backend = _Gated(hf)
        mixed = _batched(backend, [_job(prompts[1], 5, max_tokens=24), _job(prompts[0], 11, n=2, max_tokens=24),
                                   _job(prompts[2], 7, n=3, max_tokens=24)], first=_job("hi", 0, max_tokens=2))
        assert len(backend.calls[1][0]) == 3  # one batch of three requests (six rows)
        assert [r["text"] for r in mixed[1]] == [r["text"] for r in alone]
        assert alone[0]["text"] != alone[1]["text"]  # each choice has its own seed
    finally:
        torch.set_num_threads(threads)


def test_batcher_waits_for_requests_still_arriving() -> None:
    """While the server reports a request accepted but not yet queued, the batcher holds its batch open
    for it (up to gather_s) instead of starting without it; with nothing arriving it starts at once."""
    from vpo_harness.search.serve_batcher import Batcher

    backend = ScriptedBackend(_echo)
    arriving = [1]
    b = Batcher(backend, max_batch=64, arriving=lambda: arriving[0], gather_s=60)
    try:
        fa = b.submit(_job("a", 1))
        deadline = time.monotonic() + 60
        while b.q.qsize() and time.monotonic() < deadline:  # the batcher has taken "a" and is waiting
            time.sleep(0.01)
        time.sleep(0.05)
        fb = b.submit(_job("b", 2))
        arriving[0] = 0
        assert [r["text"] for r in fa.result(60) + fb.result(60)] == ["a|seed=1|STOPHERE tail", "b|seed=2|STOPHERE tail"]
        assert [len(reqs) for reqs, _ in backend.calls] == [2]  # one batch
        fc = b.submit(_job("c", 3))
        fc.result(60)
        assert [len(reqs) for reqs, _ in backend.calls] == [2, 1]
    finally:
        b.close()


def test_a_busy_port_is_refused_before_the_model_loads(tmp_path, capsys) -> None:
    """The port is checked first: a model folder that does not exist is not even looked at, and the
    answer is one line naming the port (it was a raw [Errno 98] after the model had loaded)."""
    import socket

    from vpo_harness.search.serve import main as serve_main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        assert serve_main(["--model", f"hf:{tmp_path / 'no-such-model'}", "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--port {port}: cannot listen on 127.0.0.1:{port}" in err[0]
    assert "no-such-model" not in err[0]
