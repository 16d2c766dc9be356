"""The tiny policy: a standard Hugging Face LlamaForCausalLM plus a character/word-level tokenizer.

Why a stock architecture and a stock tokenizer class: the checkpoints must load through
``AutoModelForCausalLM`` / ``AutoTokenizer`` (the ``hf`` backend, vLLM) without special cases, and the
harness renders prompts with the tokenizer's own ``chat_template`` (vpo_harness.harness.core.models.prompting).

Why characters for the grid and words for the moves: the maze prompt is a grid of single symbols and
the answer is the paper's format, move words (``<answer>RIGHT RIGHT DOWN</answer>``), so one token per
cell and one token per move keep the position arithmetic (one move = one column / one row) simple for a
model this small. Three cheap tricks keep sequences short:
- a few BPE merges fuse "symbol + space" so the grid "S . # ..." costs one token per cell;
- the move words (with and without a leading space) are single added tokens: a word-level vocabulary
  for the answer, so a route of n moves is n tokens;
- fixed strings (answer tags, the compact prompt's instruction line, chat role markers) are single
  added tokens.
Every printable ASCII character is in the vocabulary, so any prompt (goal weights, other tasks) still
encodes.
"""
from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

BOS, EOS, PAD, UNK = "<|bos|>", "<|end|>", "<|pad|>", "<|unk|>"
ROLE_TOKENS = ["<|system|>", "<|user|>", "<|assistant|>"]

#: the simplest template that render_messages can use: role marker, content, end marker
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)

MAX_M = 5
#: fixed strings that become one token each (answer tags first: the model emits them)
PHRASES = (
    ["<answer>", "</answer>"]
    + [f"<route_{i}>" for i in range(1, MAX_M + 1)]
    + [f"</route_{i}>" for i in range(1, MAX_M + 1)]
    + [f"<route_{i}>...</route_{i}>" for i in range(1, MAX_M + 1)]
    + ["Budget: ", "\nAnswer: <answer>moves</answer>", " different routes: ", "\nAnswer: "]
    + ["UP", "DOWN", "LEFT", "RIGHT", " UP", " DOWN", " LEFT", " RIGHT"]
)
GRID_SYMBOLS = ".#SEGDLB"


def build_tokenizer() -> PreTrainedTokenizerFast:
    """Char-level BPE (printable ASCII + newline) with 'symbol+space' merges and phrase tokens."""
    chars = list(dict.fromkeys(string.printable))          # includes space, \n, \t, ...
    vocab: dict[str, int] = {}
    for tok in [PAD, BOS, EOS, UNK] + ROLE_TOKENS:
        vocab[tok] = len(vocab)
    for ch in chars:
        vocab.setdefault(ch, len(vocab))
    merges = [(s, " ") for s in GRID_SYMBOLS]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=UNK, fuse_unk=False))
    tok.decoder = decoders.Fuse()
    tok.add_special_tokens([PAD, BOS, EOS, UNK] + ROLE_TOKENS)
    tok.add_tokens(PHRASES)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                   unk_token=UNK)
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"          # generation batches are left-padded
    fast.model_max_length = 1024
    return fast


def build_model(tokenizer: PreTrainedTokenizerFast, *, hidden: int = 128, layers: int = 6, heads: int = 4,
                intermediate: int = 384, max_positions: int = 512, seed: int = 0) -> LlamaForCausalLM:
    """A small Llama; the defaults are the bundled checkpoints' size (1.3M parameters, 5.2 MB fp32)."""
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=intermediate,
        num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
        max_position_embeddings=max_positions, rope_theta=10000.0, tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, attention_dropout=0.0,
    )
    return LlamaForCausalLM(cfg)


def save_checkpoint(model: LlamaForCausalLM, tokenizer: PreTrainedTokenizerFast, out: str | Path,
                    extra: dict[str, Any] | None = None) -> Path:
    """HF folder (config.json, model.safetensors, tokenizer files) plus training_state.json."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    if extra is not None:
        (out / "vpo_training.json").write_text(json.dumps(extra, indent=2, sort_keys=True))
    return out


def store_fp16(folder: str | Path) -> Path:
    """Rewrite a checkpoint folder's weights in fp16, in place: half the bytes for a bundled policy. The
    hf backend loads them back as fp32 on a CPU, so only the rounding of the weights changes
    (bench/fp16_check.py measures what that does to the demo's best@30)."""
    model, _ = load_checkpoint(folder)
    model.to(torch.float16).save_pretrained(Path(folder), safe_serialization=True)
    return Path(folder)


def load_checkpoint(path: str | Path) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    return model, tok
