"""The generation cache: every key part counts, the store survives several writers and SIGKILL, and a
run reuses exactly the chains whose key is equal (a second identical run samples none, a run that
differs in any one key part samples all of them)."""
from __future__ import annotations

import dataclasses
import functools
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.gencache import CacheError, CachedChains, GenerationCache, cache_decision, chain_key
from vpo_harness.harness.core.models.base import GenRequest, Generation, SamplingConfig
from vpo_harness.harness.core.models.mock import MockBackend
from vpo_harness.harness.core.paths import REPO_ROOT, child_pythonpath
from vpo_harness.harness.eval import runner
from vpo_harness.harness.eval.runner import RunConfig, run
from tests.fakes.tiny_llama import tiny_llama_dir  # noqa: F401 (fixture)
from tests.harness.scripted import ScriptedBackend

MODEL = {"spec": "hf:tiny", "args": {}, "weights": "abc"}
MESSAGES = [{"role": "user", "content": "go"}]
SAMPLING = SamplingConfig(temperature=0.7, top_p=1.0, max_tokens=64, stop=(), chat_template_args=())


# ---- the key ----------------------------------------------------------------------------------


def _other(value: Any) -> Any:
    """A value of the same kind that differs."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, float):
        return value / 2 + 0.05
    if isinstance(value, int):
        return value + 1
    if isinstance(value, tuple):
        return value + ((("enable_thinking", False),) if not value or isinstance(value[0], tuple) else ("</s>",))
    raise TypeError(value)


def test_equal_inputs_give_equal_keys() -> None:
    a = chain_key(MODEL, MESSAGES, SAMPLING, 7)
    assert a == chain_key(dict(MODEL), [dict(MESSAGES[0])], dataclasses.replace(SAMPLING), 7)
    # a float setting given as an int is the same setting
    assert chain_key(MODEL, MESSAGES, dataclasses.replace(SAMPLING, top_p=1), 7) == a


@pytest.mark.parametrize("name", [f.name for f in dataclasses.fields(SamplingConfig)])
def test_every_sampling_field_is_a_key_part(name: str) -> None:
    """Iterates SamplingConfig itself: a field added later is covered without editing this test."""
    changed = dataclasses.replace(SAMPLING, **{name: _other(getattr(SAMPLING, name))})
    assert chain_key(MODEL, MESSAGES, changed, 7) != chain_key(MODEL, MESSAGES, SAMPLING, 7)


@pytest.mark.parametrize("part", ["spec", "args", "weights", "messages", "prefix", "seed"])
def test_model_prompt_prefix_and_seed_are_key_parts(part: str) -> None:
    model, messages, prefix, seed = dict(MODEL), list(MESSAGES), "", 7
    if part == "spec":
        model["spec"] = "vllm:tiny"
    elif part == "args":
        model["args"] = {"dtype": "bfloat16"}
    elif part == "weights":
        model["weights"] = "abd"
    elif part == "messages":
        messages = [{"role": "user", "content": "go!"}]
    elif part == "prefix":
        prefix = "<think>\n\n</think>\n\n"
    else:
        seed = 8
    assert chain_key(model, messages, SAMPLING, seed, prefix) != chain_key(MODEL, MESSAGES, SAMPLING, 7)


def test_a_request_prefix_enters_the_key(tmp_path: Path) -> None:
    """A request type with an assistant ``prefix`` (prefilled replies) keys on it; plain requests key on ""."""
    Prefixed = dataclasses.make_dataclass("Prefixed", [("prefix", str, "")], bases=(GenRequest,), frozen=True)
    with GenerationCache(tmp_path) as cache:
        view = CachedChains(cache, MODEL, SAMPLING)
        view.split([Prefixed("p", MESSAGES, (0,), (7,), "<think></think>")])
        with_prefix = view._keys[("p", 0)]
        view.split([GenRequest("p", MESSAGES, (0,), (7,))])
        assert view._keys[("p", 0)] == chain_key(MODEL, MESSAGES, SAMPLING, 7) != with_prefix
        assert with_prefix == chain_key(MODEL, MESSAGES, SAMPLING, 7, "<think></think>")


# ---- the store --------------------------------------------------------------------------------


def test_store_round_trip_first_writer_wins_and_clear(tmp_path: Path) -> None:
    with GenerationCache(tmp_path) as cache:
        assert cache.get_many(["k1"]) == {}
        cache.put("k1", "hf:a", {"text": "one"})
        cache.put("k1", "hf:a", {"text": "other"})  # same key again: kept as first written
        cache.put("k2", "hf:b", {"text": "two\ud800"})  # a lone surrogate a server sent survives
        assert cache.get_many(["k1", "k2", "k3"]) == {"k1": {"text": "one"}, "k2": {"text": "two\ud800"}}
        st = cache.stats()
        assert st.entries == 2 and set(st.models) == {"hf:a", "hf:b"} and st.disk_bytes > 0
        assert cache.clear("hf:b") == 1 and cache.get_many(["k1", "k2"]) == {"k1": {"text": "one"}}
        assert cache.clear() == 1 and cache.stats().entries == 0


def test_lookups_past_one_sql_chunk(tmp_path: Path) -> None:
    with GenerationCache(tmp_path) as cache:
        for i in range(1203):
            cache.put(f"k{i}", "m", {"text": str(i)})
        got = cache.get_many(f"k{i}" for i in range(0, 1300))
    assert len(got) == 1203 and got["k1202"] == {"text": "1202"}


def test_a_file_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "generations.sqlite").write_bytes(b"not a database, just text " * 100)
    with pytest.raises(CacheError, match=r"generations\.sqlite.*vpo cache clear.*--no-cache"):
        GenerationCache(tmp_path)


_WRITER = """
import sys
from vpo_harness.harness.core.gencache import GenerationCache
folder, start, stop, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cache = GenerationCache(folder)
i = start
while stop < 0 or i < stop:
    cache.put(f"k{i}", "mock:w", {"text": "x" * (i % 97) + str(i)})
    i += 1
    if i - start == ready:
        print("ready", flush=True)
"""


def _writer(folder: Path, start: int, stop: int, ready: int = 0) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": child_pythonpath()}
    return subprocess.Popen([sys.executable, "-c", _WRITER, str(folder), str(start), str(stop), str(ready)],
                            stdout=subprocess.PIPE, text=True, env=env)


def _expected(i: int) -> dict[str, str]:
    return {"text": "x" * (i % 97) + str(i)}


def _integrity(folder: Path) -> str:
    with sqlite3.connect(str(folder / "generations.sqlite")) as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    """Three processes write overlapping key ranges at once: every key is there once, with its value."""
    procs = [_writer(tmp_path, start, start + 150) for start in (0, 100, 200)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    with GenerationCache(tmp_path) as cache:
        got = cache.get_many(f"k{i}" for i in range(400))
        assert cache.stats().entries == 350
    assert got == {f"k{i}": _expected(i) for i in range(350)}
    assert _integrity(tmp_path) == "ok"


def test_sigkill_mid_write_leaves_it_consistent(tmp_path: Path) -> None:
    """A writer killed with SIGKILL while it writes (it never stops by itself): the file checks out,
    every entry there is whole, and the next process reads and writes it."""
    proc = _writer(tmp_path, 0, -1, ready=200)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert _integrity(tmp_path) == "ok"
    with GenerationCache(tmp_path) as cache:
        n = cache.stats().entries
        got = cache.get_many(f"k{i}" for i in range(n + 10))
        assert n >= 200 and got == {f"k{i}": _expected(i) for i in range(n)}
        cache.put("after", "mock:w", {"text": "fine"})
        assert cache.get_many(["after"]) == {"after": {"text": "fine"}}


# ---- when it is on ----------------------------------------------------------------------------


@pytest.mark.parametrize("flag,spec,args,given,expect", [
    (None, "hf:maze-tiny-vpo", {}, False, True),
    (None, "vllm:Qwen/Qwen3-1.7B", {}, False, True),
    (None, "mock:moves", {}, False, True),
    (None, "mock:moves", {"fail_every": 3}, False, False),  # which chain fails depends on serving order
    (None, "openai:Qwen/Qwen3-1.7B", {}, False, False),  # a server may ignore seed
    (None, "hf:policy", {}, True, False),  # a backend object (the trainer's policy): no weights digest
    (True, "openai:Qwen/Qwen3-1.7B", {}, False, True),
    (False, "mock:moves", {}, False, False),
])
def test_cache_decision(flag: bool | None, spec: str, args: dict, given: bool, expect: bool) -> None:
    use, why = cache_decision(flag, spec, args, given)
    assert use is expect and why


# ---- in a run ---------------------------------------------------------------------------------


@pytest.fixture
def sampled(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every chain the mock backend really samples, counted outside the code under test; and a fixed
    weights digest (the mock has no weights) so the weights key part can be changed."""
    calls: list[tuple[str, int]] = []
    real = MockBackend.generate

    def counting(self: MockBackend, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for gen in real(self, requests, sampling):
            calls.append((gen.problem_id, gen.chain_index))
            yield gen

    monkeypatch.setattr(MockBackend, "generate", counting)
    monkeypatch.setattr(runner, "model_fingerprint", lambda spec, args=None: "weights-1")
    return calls


BASE = dict(task="maze", model="mock:moves", limit=2, n=3, m=2, ks=(1, 2), progress=False)
N_CHAINS = 2 * 3


def _run(tmp_path: Path, name: str, **kw: Any) -> Path:
    return run(RunConfig.of(**{**BASE, "out": str(tmp_path / name), **kw}))


def _rows(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]


def _config(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "config.json").read_text())


def test_second_identical_run_samples_nothing(tmp_path: Path, sampled: list) -> None:
    first = _run(tmp_path, "a")
    assert len(sampled) == N_CHAINS and _config(first)["cache"]["found"] == 0
    sampled.clear()
    second = _run(tmp_path, "b")
    assert sampled == []
    rows = _rows(second)
    assert len(rows) == N_CHAINS and all(r["extra"]["cached"] is True for r in rows)
    assert not any("cached" in r.get("extra", {}) for r in _rows(first))
    strip = lambda rs: sorted((r["problem_id"], r["chain_index"], r["seed"], r["text"], r["rewards"]) for r in rs)
    assert strip(rows) == strip(_rows(first))
    results = json.loads((second / "results.json").read_text())
    assert results["n_cached"] == N_CHAINS
    assert results["metrics"] == json.loads((first / "results.json").read_text())["metrics"]
    assert _config(second)["cache"] | {"dir": None} == {"enabled": True, "found": N_CHAINS, "sampled": 0,
                                                      "dir": None, "why": _config(second)["cache"]["why"],
                                                      "runtime": {}}


@pytest.mark.parametrize("change", [
    {"model": "mock:words"},                   # model
    {"model_args": {"length": 5}},             # a model arg that changes the text
    "weights",                                 # the weights digest
    {"prompt_style": "compact"},               # the prompt
    {"chat_template_args": {"enable_thinking": False}},
    {"temperature": 0.5},
    {"top_p": 0.9},
    {"max_tokens": 512},
    {"seed": 1},
], ids=["model", "model_args", "weights", "prompt", "chat_template_args", "temperature", "top_p", "max_tokens",
        "seed"])
def test_a_run_differing_in_one_key_part_samples_every_chain(tmp_path: Path, sampled: list,
                                                             monkeypatch: pytest.MonkeyPatch, change: Any) -> None:
    _run(tmp_path, "a")
    sampled.clear()
    if change == "weights":
        monkeypatch.setattr(runner, "model_fingerprint", lambda spec, args=None: "weights-2")
        change = {}
    folder = _run(tmp_path, "b", **change)
    assert len(sampled) == N_CHAINS
    assert not any(r.get("extra", {}).get("cached") for r in _rows(folder))
    assert _config(folder)["cache"]["found"] == 0


def test_execution_args_and_bigger_pools_reuse_what_they_share(tmp_path: Path, sampled: list) -> None:
    _run(tmp_path, "a")
    sampled.clear()
    _run(tmp_path, "b", model_args={"latency_s": 0.0})  # how requests are made, not what they return
    assert sampled == []
    folder = _run(tmp_path, "c", n=5)  # chains 0-2 of each problem are the same chains; 3-4 are new
    assert sorted(sampled) == sorted((p, c) for p in {p for p, _ in sampled} for c in (3, 4))
    assert len(sampled) == 2 * 2 and _config(folder)["cache"] | {"dir": None, "why": None} == {
        "enabled": True, "found": N_CHAINS, "sampled": 4, "dir": None, "why": None, "runtime": {}}


def test_no_cache_samples_everything_and_records_it(tmp_path: Path, sampled: list) -> None:
    _run(tmp_path, "a")
    sampled.clear()
    folder = _run(tmp_path, "b", cache=False)
    assert len(sampled) == N_CHAINS and _config(folder)["cache"] == {"enabled": False, "why": "--no-cache"}
    assert json.loads((folder / "results.json").read_text())["n_cached"] == 0


def test_errors_are_not_stored(tmp_path: Path) -> None:
    """A failed chain is sampled again by the next run (a retry should retry), the others are not."""
    first = ScriptedBackend(fail=[1])
    run(RunConfig.of(**{**BASE, "model": "scripted:x", "out": str(tmp_path / "a"), "cache": True}), backend=first)
    again = ScriptedBackend()
    run(RunConfig.of(**{**BASE, "model": "scripted:x", "out": str(tmp_path / "b"), "cache": True}), backend=again)
    assert sorted(again.calls) == sorted((p, 1) for p, _ in first.calls if _ == 1)


def test_a_passed_backend_is_not_cached_by_default(tmp_path: Path) -> None:
    for name in ("a", "b"):
        backend = ScriptedBackend()
        folder = run(RunConfig.of(**{**BASE, "model": "scripted:x", "out": str(tmp_path / name)}), backend=backend)
        assert len(backend.calls) == N_CHAINS
    assert _config(folder)["cache"]["enabled"] is False


# ---- the commands -----------------------------------------------------------------------------


def test_vpo_run_flags_and_vpo_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["run", "--task", "maze", "--model", "mock:moves", "--limit", "2", "-n", "3", "--no-progress"]
    assert main(common + ["--out", str(tmp_path / "a")]) == 0
    assert main(common + ["--out", str(tmp_path / "b"), "--no-cache"]) == 0
    assert _config(tmp_path / "b")["cache"]["enabled"] is False
    capsys.readouterr()
    assert main(common + ["--out", str(tmp_path / "c"), "--cache"]) == 0
    assert "6 of 6 chains found, 0 to sample" in capsys.readouterr().err
    assert main(["cache", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["entries"] == 6 and shown["models"]["mock:moves"]["entries"] == 6
    assert shown["path"] == str(Path(os.environ["VPO_CACHE"]) / "generations" / "generations.sqlite")
    assert main(["cache"]) == 0 and "mock:moves" in capsys.readouterr().out
    assert main(["cache", "clear", "--model", "mock:words"]) == 0 and "removed 0 chains" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0 and "removed 6 chains" in capsys.readouterr().out
    assert main(["cache", "--model", "mock:moves"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--model" in err[0]


def test_an_unusable_cache_file_is_a_miss_with_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is not a database: the run samples and succeeds, saying once what to do."""
    cache_file = Path(os.environ["VPO_CACHE"], "generations", "generations.sqlite")
    cache_file.parent.mkdir(parents=True, exist_ok=True)
    cache_file.write_bytes(b"garbage " * 512)
    rc = main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "-n", "1", "--no-progress",
               "--out", str(tmp_path / "a")])
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if "generation cache" in ln]
    assert rc == 0 and len(err) == 1 and str(cache_file) in err[0] and "--no-cache" in err[0]
    assert "vpo cache clear" in err[0] and _config(tmp_path / "a")["cache"]["enabled"] is False


@pytest.mark.parametrize("flag,expect", [([], None), (["--no-cache"], False), (["--cache"], True)])
def test_vpo_demo_passes_the_flag_to_its_runs(flag: list[str], expect: bool | None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool | None] = []

    def first_run_only(cfg: RunConfig) -> Path:
        seen.append(cfg.execution.cache)
        raise RuntimeError("stopped after the first run's config")

    monkeypatch.setattr(runner, "run", first_run_only)
    assert main(["demo", "--limit", "1", "--threads", "1", *flag]) == 2
    assert seen == [expect]


def test_a_real_hf_model_hits_without_loading_and_new_weights_miss(tiny_llama_dir, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The hf backend on a real (tiny) checkpoint, weights digest from the files: a second identical
    run neither loads the model nor samples; the same folder with other weights samples every chain."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    from vpo_harness.harness.core.models.hf import HFBackend

    ckpt = tmp_path / "ckpt"
    shutil.copytree(tiny_llama_dir, ckpt)
    built: list[str] = []
    calls: list[tuple[str, int]] = []
    real_init, real_generate = HFBackend.__init__, HFBackend.generate

    @functools.wraps(real_init)  # the factory reads the accepted --model-args off the signature
    def init(self: HFBackend, model: str, **kw: Any) -> None:
        built.append(model)
        real_init(self, model, **kw)

    def generate(self: HFBackend, requests: Sequence[GenRequest], sampling: SamplingConfig) -> Iterator[Generation]:
        for gen in real_generate(self, requests, sampling):
            calls.append((gen.problem_id, gen.chain_index))
            yield gen

    monkeypatch.setattr(HFBackend, "__init__", init)
    monkeypatch.setattr(HFBackend, "generate", generate)
    work = dict(task="maze", model=f"hf:{ckpt}", model_args={"device": "cpu", "batch_size": 4}, limit=2, n=2, m=1,
                ks=(1,), prompt_style="compact", max_tokens=6, temperature=1.0, progress=False)
    first = run(RunConfig.of(**work, out=str(tmp_path / "a")))
    assert len(built) == 1 and len(calls) == 4
    second = run(RunConfig.of(**work, out=str(tmp_path / "b")))
    assert len(built) == 1 and len(calls) == 4  # neither built nor sampled
    assert sorted((r["problem_id"], r["chain_index"], r["text"]) for r in _rows(second)) == \
        sorted((r["problem_id"], r["chain_index"], r["text"]) for r in _rows(first))
    weights = next(ckpt.glob("*.safetensors"))
    tensors = load_file(str(weights))
    name = next(iter(tensors))
    tensors[name] = tensors[name] + torch.full_like(tensors[name], 0.01)
    save_file(tensors, str(weights), metadata={"format": "pt"})
    calls.clear()
    third = run(RunConfig.of(**work, out=str(tmp_path / "c")))
    assert len(built) == 2 and len(calls) == 4 and _config(third)["cache"]["found"] == 0


def test_a_failing_cache_write_warns_once_and_the_run_goes_on(tmp_path: Path, sampled: list,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    def full_disk(self: GenerationCache, key: str, model: str, value: Any) -> None:
        raise CacheError(f"generation cache {self.path}: database or disk is full")

    monkeypatch.setattr(GenerationCache, "put", full_disk)
    folder = _run(tmp_path, "a")
    assert len(_rows(folder)) == N_CHAINS and json.loads((folder / "results.json").read_text())["n_chains"] == N_CHAINS
    warnings = [ln for ln in capsys.readouterr().err.splitlines() if "disk is full" in ln]
    assert len(warnings) == 1 and "goes on" in warnings[0]


def test_a_failing_lookup_is_a_miss_with_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def execute(self, *a: Any) -> Any:
            raise sqlite3.OperationalError("disk I/O error")

        def close(self) -> None:
            pass

    real_init = GenerationCache.__init__

    def init(self: GenerationCache, folder: Any = None) -> None:
        real_init(self, folder)
        self._db.close()
        self._db = Broken()

    monkeypatch.setattr(GenerationCache, "__init__", init)
    rc = main(["run", "--task", "maze", "--model", "mock:moves", "--limit", "1", "-n", "1", "--no-progress",
               "--out", str(tmp_path / "a")])
    err = [ln for ln in capsys.readouterr().err.strip().splitlines() if "generation cache" in ln]
    assert rc == 0 and len(err) == 1 and "disk I/O error" in err[0] and "--no-cache" in err[0]
    assert len(_rows(tmp_path / "a")) == 1


# ---- damage ---------------------------------------------------------------------------------------


def _flip_on_disk(folder: Path, needle: bytes) -> None:
    """Flip one byte of ``needle`` inside the database file itself (the cache closed, so the WAL is
    checkpointed into it): what a bad sector or a stray write does, below SQLite."""
    db = folder / "generations.sqlite"
    data = bytearray(db.read_bytes())
    i = data.index(needle)
    data[i + 2] ^= 0x01
    db.write_bytes(bytes(data))


def test_a_flipped_byte_is_a_miss_with_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with GenerationCache(tmp_path) as cache:
        cache.put("k1", "m", {"text": "route UP UP LEFT"})
        cache.put("k2", "m", {"text": "route DOWN"})
        cache.put("k3", "m", {"text": "route RIGHT RIGHT"})
    _flip_on_disk(tmp_path, b"UP UP LEFT")
    _flip_on_disk(tmp_path, b"RIGHT RIGHT")
    with GenerationCache(tmp_path) as cache:
        assert cache.stats().damaged == 2
        assert cache.get_many(["k1", "k2"]) == {"k2": {"text": "route DOWN"}}
        assert cache.get_many(["k3"]) == {}
        warned = [ln for ln in capsys.readouterr().err.splitlines() if "damaged" in ln]
        assert len(warned) == 1 and str(cache.path) in warned[0]
        assert "--no-cache" in warned[0] and "vpo cache clear" in warned[0]
        cache.put("k1", "m", {"text": "sampled again"})  # the damaged entry was removed: the new one is stored
        assert cache.get_many(["k1"]) == {"k1": {"text": "sampled again"}} and cache.stats().damaged == 0


def test_a_value_moved_under_another_key_is_a_miss(tmp_path: Path) -> None:
    with GenerationCache(tmp_path) as cache:
        cache.put("k1", "m", {"text": "one"})
        cache.put("k2", "m", {"text": "two"})
    with sqlite3.connect(str(tmp_path / "generations.sqlite")) as db:
        value, sha = db.execute("SELECT value, sha FROM chains WHERE key = 'k1'").fetchone()
        db.execute("UPDATE chains SET value = ?, sha = ? WHERE key = 'k2'", (value, sha))
    with GenerationCache(tmp_path) as cache:
        assert cache.get_many(["k1", "k2"]) == {"k1": {"text": "one"}}


def _cache_file() -> Path:
    return Path(os.environ["VPO_CACHE"], "generations", "generations.sqlite")


def test_vpo_cache_reports_and_clear_removes_a_truncated_file(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    with GenerationCache(_cache_file().parent) as cache:
        for i in range(400):
            cache.put(f"k{i}", "mock:moves", {"text": "x" * 200 + str(i)})
    data = _cache_file().read_bytes()
    _cache_file().write_bytes(data[: len(data) // 2])
    capsys.readouterr()
    assert main(["cache"]) == 1
    out = capsys.readouterr()
    assert "damaged" in out.out and "Traceback" not in out.out + out.err
    assert main(["cache", "--json"]) == 1 and json.loads(capsys.readouterr().out)["damaged_file"]
    assert main(["cache", "clear"]) == 0
    assert "removed the damaged generation cache" in capsys.readouterr().out
    assert main(["cache", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["entries"] == 0 and shown["damaged_file"] is None


def test_vpo_cache_clear_removes_a_file_that_is_not_a_database(capsys: pytest.CaptureFixture[str]) -> None:
    _cache_file().parent.mkdir(parents=True, exist_ok=True)
    _cache_file().write_bytes(b"garbage " * 512)
    assert main(["cache"]) == 1 and "not a database" in capsys.readouterr().out
    assert main(["cache", "clear", "--model", "mock:moves"]) == 0
    assert "--model mock:moves" in capsys.readouterr().out
    assert main(["cache"]) == 0 and "0 chains" in capsys.readouterr().out


def test_vpo_cache_counts_damaged_entries(capsys: pytest.CaptureFixture[str]) -> None:
    with GenerationCache(_cache_file().parent) as cache:
        cache.put("k1", "mock:moves", {"text": "a route to flip"})
        cache.put("k2", "mock:moves", {"text": "fine"})
    _flip_on_disk(_cache_file().parent, b"route to flip")
    assert main(["cache", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["damaged_entries"] == 1 and shown["entries"] == 1
    assert main(["cache"]) == 0 and "1 damaged entries" in capsys.readouterr().out


def test_a_cached_row_equals_the_row_it_replaced(tmp_path: Path) -> None:
    """A --prefix run and its replay from the cache: every field of every row is equal, the cached
    mark aside (the prefix and its token count included; they were lost once)."""
    common = ["run", "--task", "maze", "--model", "mock:moves", "--limit", "2", "-n", "3", "--no-progress",
              "--prefix", "<answer>UP, "]
    assert main(common + ["--out", str(tmp_path / "a")]) == 0
    assert main(common + ["--out", str(tmp_path / "b")]) == 0
    first, second = _rows(tmp_path / "a"), _rows(tmp_path / "b")
    assert all(r["extra"].get("cached") is True for r in second) and all(r.get("prefix") for r in first)

    def plain(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for r in rows:
            r = {k: v for k, v in r.items() if k != "score_s"}  # scoring time of this process
            r["extra"] = {k: v for k, v in r.get("extra", {}).items() if k != "cached"}
            out.append(r)
        return sorted(out, key=lambda r: (r["problem_id"], r["chain_index"]))

    assert plain(second) == plain(first)


def test_the_old_variable_still_moves_the_generation_cache_with_one_note(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    from vpo_harness.harness.core import paths

    monkeypatch.setattr(paths, "_noted", set())
    monkeypatch.setenv("VPO_CACHE_DIR", str(tmp_path / "old"))
    assert main(["cache", "--json"]) == 0 and main(["cache", "--json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out.split("\n}\n")[0] + "}")["path"] == str(tmp_path / "old" / "generations.sqlite")
    notes = [ln for ln in out.err.splitlines() if "VPO_CACHE_DIR" in ln]
    assert len(notes) == 1 and "deprecated" in notes[0] and "$VPO_CACHE" in notes[0]
    monkeypatch.delenv("VPO_CACHE_DIR")
    assert paths.generations_dir() == Path(os.environ["VPO_CACHE"]) / "generations"
    assert paths.digests_dir() == Path(os.environ["VPO_CACHE"]) / "digests"
