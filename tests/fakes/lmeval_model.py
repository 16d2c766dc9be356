"""A scripted lm-evaluation-harness model and a helper that runs the real lm_eval on a local JSON
dataset, so the `vpo import` tests read samples files lm-eval itself wrote (no hub, no weights)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Sequence


def write_samples(root: Path, task: str, docs: Sequence[dict[str, Any]], replies: dict[str, list[str]],
                  repeats: int, metrics: Sequence[Any], per_repeat: bool) -> Path:
    """Run lm_eval's ``simple_evaluate`` (log_samples on) on ``docs`` with ``repeats`` and return the
    ``samples_<task>_<date>.jsonl`` it wrote. The model replies ``replies[question][j]`` to repeat
    j. ``per_repeat``: filters ``repeat_1..repeat_K`` each pass one repeat to the metrics (what
    `vpo import` needs for per-repeat scores); otherwise lm-eval's default ``take_first``."""
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    class Scripted(LM):
        def __init__(self) -> None:
            super().__init__()
            self.seen: dict[str, int] = {}

        def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:  # type: ignore[override]
            out = []
            for r in requests:
                q = r.args[0]
                j = self.seen.get(q, 0)
                self.seen[q] = j + 1
                out.append(replies[q][j])
            return out

        def loglikelihood(self, requests, disable_tqdm: bool = False):  # type: ignore[override]
            raise NotImplementedError

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):  # type: ignore[override]
            raise NotImplementedError

    def pick(j: int) -> Callable[[Any, Any], list[str]]:
        return lambda resps, docs: [r[j] for r in resps]

    root.mkdir(parents=True, exist_ok=True)
    data = root / f"{task}.jsonl"
    data.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    cfg: dict[str, Any] = {
        "task": task, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data)}},
        "test_split": "test", "output_type": "generate_until", "doc_to_text": "{{question}}",
        "doc_to_target": "{{answer}}", "repeats": repeats,
        "generation_kwargs": {"until": ["\n\n"], "do_sample": True, "temperature": 0.7},
        "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in metrics]}
    if per_repeat:
        cfg["filter_list"] = [{"name": f"repeat_{j + 1}", "filter": [{"function": "custom", "filter_fn": pick(j)}]}
                              for j in range(repeats)]
    tracker = EvaluationTracker(output_path=str(root / "out"))
    res = simple_evaluate(model=Scripted(), tasks=[cfg], log_samples=True, evaluation_tracker=tracker,
                          task_manager=TaskManager(include_defaults=False))
    assert res is not None
    tracker.save_results_aggregated(results=res, samples=res["samples"])
    tracker.save_results_samples(task_name=task, samples=res["samples"][task])
    [path] = (root / "out").rglob(f"samples_{task}_*.jsonl")
    return path
