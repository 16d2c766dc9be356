"""load_backend spec parsing, model_args coercion and the errors users see."""
from __future__ import annotations

import sys

import pytest

from vpo_harness.harness.core.models import KNOWN_BACKENDS, load_backend, parse_model_args, parse_spec, register_backend
from vpo_harness.harness.core.models.base import Backend


def test_parse_model_args_coerces_types():
    got = parse_model_args("tensor_parallel_size=2, gpu_memory_utilization=0.85,enforce_eager=true,"
                           "dtype=bfloat16,max_model_len=none,flag=False,name=a=b")
    assert got == {"tensor_parallel_size": 2, "gpu_memory_utilization": 0.85, "enforce_eager": True,
                   "dtype": "bfloat16", "max_model_len": None, "flag": False, "name": "a=b"}
    assert isinstance(got["tensor_parallel_size"], int) and isinstance(got["gpu_memory_utilization"], float)


def test_parse_model_args_other_forms():
    assert parse_model_args(None) == {} and parse_model_args("") == {} and parse_model_args(" , ") == {}
    d = {"a": 1}
    out = parse_model_args(d)
    assert out == d and out is not d
    with pytest.raises(ValueError, match="key=value"):
        parse_model_args("a=1,oops")
    with pytest.raises(ValueError, match="empty key"):
        parse_model_args("=3")
    with pytest.raises(TypeError):
        parse_model_args(3)  # type: ignore[arg-type]


def test_parse_spec():
    assert parse_spec("hf:smollm2-135m") == ("hf", "smollm2-135m")
    assert parse_spec("vllm:Qwen/Qwen3-1.7B") == ("vllm", "Qwen/Qwen3-1.7B")
    assert parse_spec("openai:gpt-4o-mini") == ("openai", "gpt-4o-mini")
    assert parse_spec("hf:/abs/path:with:colons") == ("hf", "/abs/path:with:colons")


@pytest.mark.parametrize("spec", ["nope:model", "tgi:foo"])
def test_unknown_backend_lists_known(spec):
    with pytest.raises(ValueError) as err:
        load_backend(spec)
    for known in ("hf", "vllm", "openai"):
        assert known in str(err.value)
    assert set(KNOWN_BACKENDS) >= {"hf", "vllm", "openai"}


@pytest.mark.parametrize("spec", ["smollm2-135m", "hf:", ""])
def test_malformed_specs(spec):
    with pytest.raises(ValueError, match="spec"):
        load_backend(spec)


def test_openai_needs_a_url(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
        load_backend("openai:some-model")


def test_openai_spec_with_args_and_env(monkeypatch):
    b = load_backend("openai:m1", base_url="http://127.0.0.1:9/v1", model_args="mode=completions,concurrency=4,use_n=false")
    assert (b.name, b.model, b.base_url, b.mode, b.settings.concurrency, b.use_n) == ("openai", "m1", "http://127.0.0.1:9/v1",
                                                                             "completions", 4, False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/v1")
    b2 = load_backend("openai:m2")
    assert b2.base_url == "http://127.0.0.1:8/v1"
    with pytest.raises(ValueError, match=r"unknown --model-args no_such_option for the openai backend; valid: .*concurrency"):
        load_backend("openai:m3", model_args="no_such_option=1")


def test_unknown_hf_model_arg_is_one_line_listing_valid_names():
    with pytest.raises(ValueError, match=r"unknown --model-args bogus_key for the hf backend; valid: .*batch_size"):
        load_backend("hf:maze-tiny-vpo", model_args="bogus_key=1")


def test_vllm_without_vllm_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` raise ImportError
    with pytest.raises(ImportError) as err:
        load_backend("vllm:some/model")
    msg = str(err.value)
    assert "vpo-harness[vllm]" in msg and "GPU" in msg  # what to do on a GPU
    assert "scripts/setup_vllm_cpu.sh" in msg and "docs/vllm-cpu.md" in msg  # and on CPU: the separate venv
    assert "vpo-harness[vllm-cpu]" not in msg


def test_hf_unknown_path_is_a_clear_error(tmp_path):
    with pytest.raises((FileNotFoundError, ValueError)) as err:
        load_backend(f"hf:{tmp_path / 'missing-model'}")
    assert "missing-model" in str(err.value)


def test_register_backend():
    class Dummy(Backend):
        name = "dummy"

        def __init__(self, model, args):
            self.model, self.args = model, args

        def generate(self, requests, sampling):
            return iter(())

    register_backend("dummy", lambda model, url, args: Dummy(model, args))
    try:
        b = load_backend("dummy:x", model_args="a=1")
        assert isinstance(b, Dummy) and b.model == "x" and b.args == {"a": 1}
    finally:
        from vpo_harness.harness.core import models

        models._FACTORIES.pop("dummy")
        models.KNOWN_BACKENDS = tuple(models._FACTORIES)
