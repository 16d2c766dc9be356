"""Bundled policies may be stored in fp16: half the bytes, the same weights up to fp16 rounding."""
from __future__ import annotations

import torch
from safetensors import safe_open

from vpo_harness.training.model import build_model, build_tokenizer, load_checkpoint, save_checkpoint, store_fp16


def test_store_fp16_halves_the_file_and_rounds_the_weights(tmp_path):
    tok = build_tokenizer()
    model = build_model(tok, hidden=32, layers=1, heads=2, intermediate=64, seed=1)
    folder = save_checkpoint(model, tok, tmp_path / "ck", extra={"stage": "test"})
    before = (folder / "model.safetensors").stat().st_size
    store_fp16(folder)
    after = (folder / "model.safetensors").stat().st_size
    assert after < 0.6 * before
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        assert all(f.get_tensor(k).dtype == torch.float16 for k in f.keys())
    again, _ = load_checkpoint(folder)
    for (name, a), (_, b) in zip(model.state_dict().items(), again.state_dict().items()):
        assert b.dtype == torch.float32, name
        assert torch.equal(a.to(torch.float16).float(), b), name
    assert (folder / "vpo_training.json").exists()
