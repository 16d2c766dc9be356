"""The test doubles other suites lean on behave as documented."""
from __future__ import annotations

import pytest

from vpo_harness.harness.core.models import load_backend
from vpo_harness.harness.core.models.base import GenRequest, SamplingConfig
from tests.fakes.scripted_backend import ScriptedBackend, SimulatedCrash, register


def reqs():
    return [GenRequest(f"p{i}", [{"role": "user", "content": "two words"}], (0, 1, 2), (10 + i, 20 + i, 30 + i))
            for i in range(2)]


def test_scripted_default_texts_errors_and_calls():
    b = ScriptedBackend(errors=[("p1", 2)])
    gens = list(b.generate(reqs(), SamplingConfig()))
    assert len(gens) == 6 and len(b.calls) == 1
    assert gens[0].text == "p0/chain0/seed10" and gens[0].prompt_tokens == 2
    (err,) = [g for g in gens if g.error]
    assert (err.problem_id, err.chain_index, err.text) == ("p1", 2, "")


def test_scripted_crash_and_shuffle():
    b = ScriptedBackend(crash_after=4, shuffle_seed=1)
    got = []
    with pytest.raises(SimulatedCrash):
        for g in b.generate(reqs(), SamplingConfig()):
            got.append((g.problem_id, g.chain_index))
    assert len(got) == 4 and got != sorted(got)


def test_scripted_responder_and_registration():
    register()
    try:
        b = load_backend("scripted:x", model_args={"responder": lambda r, c, s: "A" * (c + 1)})
        assert [g.text for g in b.generate(reqs()[:1], SamplingConfig())] == ["A", "AA", "AAA"]
        assert b.describe() == {"backend": "scripted", "model": "x"}
    finally:
        from vpo_harness.harness.core import models

        models._FACTORIES.pop("scripted", None)
        models.KNOWN_BACKENDS = tuple(models._FACTORIES)
