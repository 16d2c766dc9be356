"""Zoo and checkpoint models carry their prompt style and token budget; prompts that do not fit the
context are a clear error; the hf backend reports tokens while a batch runs (progress bar)."""
from __future__ import annotations

from pathlib import Path

import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from vpo_harness.harness.core.models.hf import HFBackend
from vpo_harness.harness.core.models.zoo import generation_defaults
from vpo_harness.harness.core.paths import BUNDLED_CHECKPOINTS
from tests.fakes.tiny_llama import tiny_llama_dir  # noqa: F401 (fixture)


def test_bundled_policies_defaults_come_from_their_training_record() -> None:
    d, source = generation_defaults("hf:maze-tiny-vpo")
    assert source.endswith("maze-tiny-vpo/vpo_training.json")
    assert (d.prompt_style, d.max_tokens(1), d.max_tokens(3)) == ("compact", 40, 110)
    d2, _ = generation_defaults(f"hf:{BUNDLED_CHECKPOINTS / 'maze-tiny-grpo'}")  # a path works too
    assert d2 == d
    assert generation_defaults("openai:maze-tiny-vpo") is None and generation_defaults("hf:gpt2") is None


@pytest.mark.integration  # two short runs of the bundled policy (~30 s on a loaded 2-core machine)
def test_run_takes_the_models_defaults_unless_overridden(tmp_path: Path, capsys) -> None:
    rc = main(["run", "--task", "maze", "--model", "hf:maze-tiny-vpo", "--limit", "1", "-n", "1", "-m", "3",
               "--out", str(tmp_path / "a"), "--no-progress"])
    assert rc in (0, 1)  # the chain may or may not score; the config is what is checked
    import json

    ident = json.loads((tmp_path / "a" / "config.json").read_text())["identity"]
    assert ident["task"]["prompt_style"] == "compact" and ident["sampling"]["max_tokens"] == 110
    assert "prompt style compact, max tokens 110 (from" in capsys.readouterr().err
    # flags win over the model's defaults (a run that stores a row keeps its folder: 8 tokens still sample)
    rc = main(["run", "--task", "maze", "--model", "hf:maze-tiny-vpo", "--limit", "1", "-n", "1",
               "--max-tokens", "8", "--out", str(tmp_path / "b"), "--no-progress"])
    ident = json.loads((tmp_path / "b" / "config.json").read_text())["identity"]
    assert ident["task"]["prompt_style"] == "compact" and ident["sampling"]["max_tokens"] == 8


def test_prompt_longer_than_the_context_is_a_clear_error(tiny_llama_dir) -> None:  # noqa: F811
    b = HFBackend(str(tiny_llama_dir), batch_size=2, device="cpu")
    long = GenRequest("maze-7", [{"role": "user", "content": "go " * 2000}], (0,), (1,))
    with pytest.raises(ValueError, match=r"maze-7: the prompt is \d+ tokens, longer than .* context of 512"):
        list(b.generate([long], SamplingConfig(max_tokens=4)))


def test_tokens_are_reported_while_a_batch_runs(tiny_llama_dir) -> None:  # noqa: F811
    b = HFBackend(str(tiny_llama_dir), batch_size=4, device="cpu")
    seen: list[int] = []
    b.on_tokens = seen.append
    req = GenRequest("p", [{"role": "user", "content": "find the exit"}], (0, 1, 2, 3), (1, 2, 3, 4))
    gen = b.generate([req], SamplingConfig(temperature=1.0, max_tokens=6))
    first = next(gen)  # the whole batch of 4 decodes before the first chain is yielded
    assert len(seen) >= 2 and sum(seen) >= 4 * 2  # ... and reported every decoding step on the way
    list(gen)
    assert first.completion_tokens is not None


def test_runner_wires_a_token_bar_to_batching_backends(tmp_path: Path) -> None:
    from vpo_harness.harness.eval.runner import RunConfig, run
    from tests.harness.scripted import ScriptedBackend

    class Batching(ScriptedBackend):
        on_tokens = None

        def generate(self, requests, sampling):
            self.hooked = callable(self.on_tokens)
            if self.hooked:
                self.on_tokens(3)
            yield from super().generate(requests, sampling)

    b = Batching()
    cfg = RunConfig.of(task="maze", model="scripted:x", limit=1, n=2, ks=(1,), out=str(tmp_path / "r"), progress=True)
    run(cfg, backend=b)
    assert b.hooked and b.on_tokens is None  # set while generating, removed after
