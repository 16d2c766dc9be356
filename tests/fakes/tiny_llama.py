"""A tiny random LlamaForCausalLM + a tokenizer trained in-process: a real HF model for fast tests.

No hub, no files shipped: a byte-level BPE is trained with ``tokenizers`` on a few hundred
characters, wrapped as ``PreTrainedTokenizerFast`` with a ChatML-style ``chat_template``, and a
2-layer Llama with random weights (seeded, so every build is identical) is attached.

Reuse: ``build_tiny_llama()`` -> (model, tokenizer); ``save_tiny_llama(folder)`` writes a folder that
``AutoModelForCausalLM/AutoTokenizer.from_pretrained`` (and ``hf:FOLDER``) load; the pytest fixture
``tiny_llama_dir`` (session scope) builds that folder once per test session, and the autouse
fixture ``one_torch_thread`` runs the importing module's tests on one torch thread::

    from tests.fakes.tiny_llama import one_torch_thread, tiny_llama_dir  # noqa: F401  (re-export the fixtures)
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

try:  # the builders also run in interpreters without pytest (e.g. the vLLM venv)
    import pytest
except ImportError:  # pragma: no cover
    pytest = None  # type: ignore[assignment]

CORPUS = (
    "The quick brown fox jumps over the lazy dog. A maze has walls, paths and one exit. "
    "Answer: 42. Move up, down, left or right until you reach the goal. "
    "Question: what is two plus two? Four. Vectors of rewards score several answers at once. "
    "Best of k picks the best sample; diversity keeps the samples apart. 0123456789 +-*/=()[]{}<>,.;:!? "
    "system user assistant hello world numbers letters words tokens\n"
)

SPECIAL = ["<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_tokenizer(vocab_size: int = 300) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([CORPUS] * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny_llama(seed: int = 0, *, hidden_size: int = 32, num_layers: int = 2) -> tuple[Any, Any]:
    """(model, tokenizer). Weights are random but fixed by ``seed``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    gen = torch.random.fork_rng()
    with gen:
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
        # init std 0.02 makes near-uniform logits; larger weights give peaked, seed-dependent text
        with torch.no_grad():
            model.lm_head.weight.normal_(0.0, 0.5)
    model.eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model, tokenizer


def save_tiny_llama(folder: str | Path, seed: int = 0) -> Path:
    folder = Path(folder)
    model, tokenizer = build_tiny_llama(seed)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


if pytest is not None:

    @pytest.fixture(scope="session")
    def tiny_llama_dir(tmp_path_factory: Any) -> Path:
        """A saved tiny Llama folder, built once per session."""
        return save_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))

    @pytest.fixture(autouse=True, scope="module")
    def one_torch_thread() -> Any:
        """One torch thread for the tests of a module that imports this fixture: the tiny model's
        matmuls on a shared 2-core box only spin with more (about 20x slower); the count is put
        back after the module."""
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        yield
        torch.set_num_threads(before)
