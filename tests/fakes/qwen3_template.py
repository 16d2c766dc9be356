"""The part of Qwen3's chat template that the paper's protocol is about, for tests: the generation
prompt, then an empty think block when the caller passes ``enable_thinking=false`` (undefined or true:
the model is left to think). Plain constants: the vLLM venv's driver imports this without pytest."""

QWEN3_STYLE = (
    "{%- for m in messages %}{{- '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)
THINK_BLOCK = "<think>\n\n</think>\n\n"
