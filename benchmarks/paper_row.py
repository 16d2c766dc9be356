"""What the VPO paper (arXiv 2605.22817) reports for its Maze row, and how it names the methods.

Kept with the benchmarks, not with the model zoo: these are facts about the paper's table, which the
demo, the model cards and the reports print beside our own figures; the zoo only decides which
checkpoints exist. The values are the paper's Qwen3-4B numbers, not something this project measured.
"""
from __future__ import annotations

#: the row's table label of each method, in the paper's spelling
ROW_LABELS: dict[str, str] = {"grpo": "GRPO", "max_at_k": "Max-at-K", "multi_rlvr": "Multi-RLVR", "vpo": "VPO"}

#: the paper's Maze best@30 of each method (Qwen3-4B), printed beside ours
PAPER_MAZE_BEST30: dict[str, float] = {"grpo": 0.432, "max_at_k": 0.577, "multi_rlvr": 0.436, "vpo": 0.593}
