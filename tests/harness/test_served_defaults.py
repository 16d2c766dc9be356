"""A model's generation defaults travel with it: `vpo serve` publishes them in /v1/models, the openai
backend reads them (and vLLM's ``max_model_len``), a request that cannot fit the served context is
refused before anything is sampled, and a folder refused for a changed setting names the flag."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.models import model_defaults
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from vpo_harness.harness.core.models.openai_server import OpenAIServerBackend
from vpo_harness.harness.core.models.served_defaults import ContextOverflow, check_fit, publish, read
from vpo_harness.harness.core.models.zoo import TINY_MAZE_DEFAULTS, GenerationDefaults
from vpo_harness.search.serve import ModelServer
from tests.fakes.scripted_backend import ScriptedBackend
from tests.fakes.tiny_llama import tiny_llama_dir  # noqa: F401 (fixture)


def _echo_seed(req: GenRequest, chain: int, seed: int) -> str:
    return f"<route_1>RIGHT</route_1> seed={seed}"


class _Sized(ScriptedBackend):
    """A scripted model with a context length, as the hf backend reports it."""

    context_len = 64


@pytest.fixture()
def server():
    backends: list[ModelServer] = []

    def start(seeded: bool = True, defaults=(TINY_MAZE_DEFAULTS, "ckpt/vpo_training.json")) -> tuple[ModelServer, _Sized]:
        backend = _Sized(_echo_seed)
        srv = ModelServer(backend, "tiny", defaults=defaults, seeded=seeded).start_background()
        backends.append(srv)
        return srv, backend

    yield start
    for srv in backends:
        srv.shutdown()


def test_published_fields_read_back_and_vllm_entries_give_the_context() -> None:
    entry = {"id": "m", **publish(GenerationDefaults("compact", 40, 110), "x.json", context_len=512, seeded=True)}
    got = read({"data": [{"id": "other"}, entry]}, "m", "http://h/v1")
    assert got.defaults == GenerationDefaults("compact", 40, 110) and got.context_len == 512 and got.seeded
    assert "http://h/v1" in got.source and "x.json" in got.source
    vllm = read({"object": "list", "data": [{"id": "Qwen/Qwen3-1.7B", "max_model_len": 6144}]}, "Qwen/Qwen3-1.7B", "u")
    assert vllm.defaults is None and vllm.context_len == 6144 and not vllm.seeded
    odd = read({"data": [{"id": "m", "prompt_style": 3, "max_tokens_single": "40", "max_model_len": True}]}, "m", "u")
    assert odd.defaults is None and odd.context_len is None
    assert read({"data": [{"id": "other"}]}, "m", "u") is None and read(None, "m", "u") is None


def test_check_fit_names_both_numbers_and_the_flag() -> None:
    with pytest.raises(ContextOverflow, match=r"prompt of p2 \(500 tokens\) plus --max-tokens 40 is 540 tokens, "
                                              r"more than the served context of 512; lower --max-tokens to 12"):
        check_fit([("p1", 100), ("p2", 500)], 40, 512, "openai:m")
    with pytest.raises(ContextOverflow, match="prompt alone fills it: use a shorter --prompt-style"):
        check_fit([("p1", 600)], 40, 512, "openai:m")
    with pytest.raises(ContextOverflow, match="--max-tokens 1024 leaves no room"):
        check_fit([("p1", None)], 1024, 512, "openai:m")  # no tokenizer: the budget alone is checked
    check_fit([("p1", 472)], 40, 512, "openai:m")  # exactly full fits
    check_fit([("p1", None)], 511, 512, "openai:m")


def test_vpo_serve_publishes_the_defaults_and_the_backend_reads_them(server) -> None:
    srv, _ = server()
    found = model_defaults("openai:tiny", base_url=srv.url)
    assert found is not None and found[0] == TINY_MAZE_DEFAULTS and "ckpt/vpo_training.json" in found[1]
    served = OpenAIServerBackend("tiny", base_url=srv.url).served()
    assert served.context_len == 64 and served.seeded
    assert model_defaults("openai:not-served", base_url=srv.url) is None  # not listed: the task's defaults
    assert model_defaults("openai:tiny", base_url="http://127.0.0.1:9/v1") is None  # no server: nothing published


@pytest.mark.parametrize("seeded", [True, False])
def test_a_seeded_server_gets_one_request_per_chain(server, seeded: bool) -> None:
    """Each chain sampled with its own seed (the local run's chains) where the server says a reply is
    a function of its seed; otherwise n is used and the server derives choice seeds itself."""
    srv, backend = server(seeded=seeded)
    b = OpenAIServerBackend("tiny", base_url=srv.url)
    try:
        gens = list(b.generate([GenRequest("p", [{"role": "user", "content": "go"}], (0, 1), (11, 22))],
                               SamplingConfig(max_tokens=8)))
    finally:
        b.close()
    texts = {g.chain_index: g.text for g in gens}
    assert (texts[1].endswith("seed=22")) is seeded
    assert texts[0].endswith("seed=11")


def test_a_prompt_that_cannot_fit_is_refused_before_any_request(server, tiny_llama_dir) -> None:  # noqa: F811
    srv, backend = server()
    b = OpenAIServerBackend("tiny", base_url=srv.url, tokenizer=str(tiny_llama_dir))
    long = GenRequest("maze-3", [{"role": "user", "content": "go " * 40}], (0,), (1,))
    short = GenRequest("maze-1", [{"role": "user", "content": "go"}], (0,), (1,))
    try:
        with pytest.raises(ContextOverflow, match=r"prompt of maze-3 \(\d+ tokens\) plus --max-tokens 30 is \d+ "
                                                  r"tokens, more than the served context of 64"):
            list(b.generate([short, long], SamplingConfig(max_tokens=30)))
        assert backend.calls == []  # nothing was sampled
        assert [g.error for g in b.generate([short], SamplingConfig(max_tokens=30))] == [None]
    finally:
        b.close()


def test_a_server_publishing_only_its_context_is_still_checked(server) -> None:
    """What vLLM's server publishes: ``max_model_len`` and no trained defaults."""
    srv, backend = server(seeded=False, defaults=None)
    assert model_defaults("openai:tiny", base_url=srv.url) is None  # the task's defaults decide
    b = OpenAIServerBackend("tiny", base_url=srv.url)
    try:
        with pytest.raises(ContextOverflow, match="--max-tokens 64 leaves no room for a prompt in the served "
                                                  "context of 64 tokens"):
            list(b.generate([GenRequest("p", [{"role": "user", "content": "go"}], (0,), (1,))],
                            SamplingConfig(max_tokens=64)))
    finally:
        b.close()
    assert backend.calls == []


def test_vpo_run_takes_the_served_defaults_and_refuses_a_budget_past_the_context(server, tmp_path, capsys) -> None:
    srv, backend = server()
    base = ["run", "--task", "maze", "--model", "openai:tiny", "--base-url", srv.url, "--limit", "2", "-n", "2",
            "--no-progress"]
    assert main([*base, "--out", str(tmp_path / "a"), "-m", "3", "--max-tokens", "30"]) == 0
    ident = json.loads((tmp_path / "a" / "config.json").read_text())["identity"]
    assert ident["task"]["prompt_style"] == "compact" and ident["sampling"]["max_tokens"] == 30
    assert "prompt style compact, max tokens 30 (from the /v1/models entry of tiny" in capsys.readouterr().err
    calls = len(backend.calls)
    assert main([*base, "--out", str(tmp_path / "b"), "--max-tokens", "100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("vpo run: error: openai:tiny: --max-tokens 100 leaves no room for a prompt in the served "
                       "context of 64 tokens; lower --max-tokens")
    assert len(backend.calls) == calls and not (tmp_path / "b" / "samples.jsonl").exists()


def test_a_folder_refused_for_a_changed_setting_names_it_and_how_to_go_on(tmp_path, capsys) -> None:
    base = ["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "-n", "2", "--no-progress",
            "--out", str(tmp_path / "r")]
    assert main([*base, "--max-tokens", "64"]) == 0
    capsys.readouterr()
    assert main([*base, "--max-tokens", "32", "--temperature", "0.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "sampling.max_tokens is 64 there, 32 now (--max-tokens)" in err
    assert "sampling.temperature is 0.7 there, 0.5 now (--temperature)" in err
    assert "to resume it, run the command with --max-tokens 64 --temperature 0.7" in err
    assert f"to start anew, pass another --out folder (or leave --out out) or delete {tmp_path / 'r'}" in err
    assert main([*base, "--max-tokens", "64", "--temperature", "0.7"]) == 0  # the named flags resume it


def _rows(folder: Path) -> list[tuple]:
    keys = ("problem_id", "chain_index", "seed", "text", "prompt_tokens", "completion_tokens", "finish_reason",
            "answers", "rewards", "scalars", "passed")
    rows = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    return sorted(tuple(json.dumps(r.get(k)) for k in keys) for r in rows)


@pytest.mark.integration  # a real `vpo serve` child and two short runs of the bundled policy (~40 s)
@pytest.mark.parametrize("m", [1, 3])
def test_served_zoo_model_samples_what_the_local_run_samples(tmp_path: Path, m: int, capsys) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "vpo_harness.search.serve", "--model", "hf:maze-tiny-vpo", "--port", "0",
                             "--threads", "1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()  # "vpo serve: ready maze-tiny-vpo at URL (...)"
        assert line.startswith("vpo serve: ready maze-tiny-vpo at "), line
        url = line.split(" at ", 1)[1].split()[0]
        common = ["--task", "maze", "-n", "2", "--limit", "4", "-m", str(m), "--no-progress", "--no-cache"]
        assert main(["run", "--model", "hf:maze-tiny-vpo", *common, "--out", str(tmp_path / "local")]) == 0
        assert main(["run", "--model", "openai:maze-tiny-vpo", "--base-url", url, *common,
                     "--out", str(tmp_path / "served")]) == 0
        # the full prompt does not fit the 512-token context: counted with the zoo model's own tokenizer
        capsys.readouterr()
        assert main(["run", "--model", "openai:maze-tiny-vpo", "--base-url", url, *common, "--prompt-style", "full",
                     "--out", str(tmp_path / "full")]) == 2
        assert re.search(r"openai:maze-tiny-vpo: the prompt of maze-test-\d+ \(\d+ tokens\) plus --max-tokens "
                         r"\d+ is \d+ tokens, more than the served context of 512", capsys.readouterr().err)
        assert not (tmp_path / "full" / "samples.jsonl").exists()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    local, served = (json.loads((tmp_path / f / "config.json").read_text())["identity"] for f in ("local", "served"))
    assert local["sampling"]["max_tokens"] == served["sampling"]["max_tokens"] == (110 if m == 3 else 40)
    assert _rows(tmp_path / "local") == _rows(tmp_path / "served")


def test_vpo_evolve_takes_the_served_defaults_too(server) -> None:
    """One rule for both commands: an evolve run's flags left open take the served model's defaults."""
    from vpo_harness.search.evolve import EvolveConfig

    srv, _ = server()
    cfg = EvolveConfig(task="maze", model="openai:tiny", base_url=srv.url, m=3,
                       model_args={"reasoning_effort": "low"})  # a request-only arg the listing does not take
    rc = cfg.run_config()
    assert (rc.task.prompt_style, rc.sampling.max_tokens) == ("compact", 110)
    srv.shutdown()  # asked once: the identity read again needs no server
    assert cfg.canonical_run().task.prompt_style == "compact"
