"""Every answer parser stays linear on long adversarial text (hypothesis fuzz under a time budget).

Hypothesis builds texts from a short run of tag / JSON / fence fragments repeated thousands of times
(the shape that made ``"<route_1>" * 16000`` take 39 s with lazy regexes). Each case is timed at
size L and 4L; a linear parser gives a ratio near 4, a quadratic one near 16. The script fails when a
ratio exceeds --max-ratio or one parse of the long text exceeds --max-seconds. A baseline in the same
run: the old lazy-regex reader on the historical case, so the speed-up is measured, not assumed.

    python bench/parsers.py [--budget 120] [--length 200000]
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Callable

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)

from vpo_harness.benchmarks import get_task, task_names  # noqa: E402
from vpo_harness.benchmarks.tags import extract_tag, find_tags, parse_numbered_tags, strip_blocks  # noqa: E402

FRAGMENTS = ["<route_1>", "</route_1>", "<route_2>", "<response_1>", "<response_3>", "</response_3>",
             "<think>", "</think>", "<answer>", "</answer>", "<tool_call>", "</tool_call>", "<entity_A>",
             "<support>", '{"name": "f", "parameters": {', '{"a":', "[", "{", '"', "\\", "```python\n",
             "```\n", "---\n", "UP ", "L", "\n", " ", "x", "1", "<", ">", "_", "</"]


def parsers() -> dict[str, Callable[[str], object]]:
    out: dict[str, Callable[[str], object]] = {
        "tags.parse_numbered_tags": lambda t: parse_numbered_tags(t, "route", 8),
        "tags.extract_tag": lambda t: extract_tag(t, "answer"),
        "tags.find_tags": lambda t: find_tags(t, "tool_call"),
        "tags.strip_blocks": lambda t: strip_blocks(t, "think"),
    }
    for name in task_names():
        task = get_task(name)
        out[f"{name}.parse(m=None)"] = lambda t, task=task: task.parse(t, None)
        out[f"{name}.parse(m=4)"] = lambda t, task=task: task.parse(t, 4)
    from vpo_harness.benchmarks.maze_env import parse_moves
    from vpo_harness.benchmarks.toolrl import parse_calls

    out["toolrl.parse_calls"] = parse_calls  # the JSON reader behind the ToolRL reward
    out["maze_env.parse_moves"] = parse_moves  # the move reader behind the Maze reward
    try:  # the authors' scorers (parse=paper), where this checkout has them
        from vpo_harness.benchmarks.musique import paper_reward
        from vpo_harness.benchmarks.toolrl import paper_structure

        out["musique.paper_reward"] = lambda t: paper_reward(t, [0, 1], ["gold answer"])
        out["toolrl.paper_structure"] = paper_structure
    except ImportError:
        pass
    return out


def _time(fn: Callable[[str], object], text: str) -> float:
    t0 = time.perf_counter()
    fn(text)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=120.0, help="seconds of fuzzing in total")
    ap.add_argument("--length", type=int, default=200_000, help="characters of the long text (short = /4)")
    ap.add_argument("--max-ratio", type=float, default=9.0, help="time(4L)/time(L) above this fails")
    ap.add_argument("--max-seconds", type=float, default=2.0, help="one parse of the long text above this fails")
    ap.add_argument("--smoke", action="store_true",
                    help="that it runs (CI): 3 texts per parser of 2000 characters, a 400-tag baseline")
    args = ap.parse_args()
    if args.smoke:
        args.budget, args.length = 0.0, 2000
    base_reps, examples_max = (400, 3) if args.smoke else (4000, 500)

    # baseline, measured here: the old lazy regex on the historical input (kept small: it is quadratic)
    old = re.compile(r"<route_1>(.*?)</route_1>", re.S | re.I)
    base_text = "<route_1>" * base_reps
    t_old = _time(lambda t: old.findall(t), base_text)
    t_new = _time(lambda t: parse_numbered_tags(t, "route", 1), base_text)
    print(f"baseline '<route_1>' * {base_reps}: lazy regex {t_old:.3f} s, tags.parse_numbered_tags {t_new * 1e3:.2f} ms "
          f"(x{t_old / max(t_new, 1e-9):.0f})")

    fns = parsers()
    worst: dict[str, tuple[float, float, str]] = {name: (0.0, 0.0, "") for name in fns}
    failures: list[str] = []
    per_parser = args.budget / len(fns)

    for name, fn in fns.items():
        stop = time.monotonic() + per_parser  # every parser gets its share, even if one ran over
        examples = [0]

        @settings(max_examples=examples_max, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6))
        def case(unit: list[str]) -> None:
            if time.monotonic() > stop and examples[0] >= 3:
                return
            examples[0] += 1
            piece = "".join(unit)
            reps = max(1, args.length // len(piece))
            # grow the text 4x at a time and stop as soon as one step is too slow, so a quadratic
            # parser costs at most a few of its own slow calls, never minutes per example
            prev, ratio, t_l, size = None, 1.0, 0.0, max(1, reps // 16)
            while True:
                text = piece * size
                t_l = min(_time(fn, text) for _ in range(3))
                if prev is not None:
                    # short times are timer and scheduler noise on a shared machine: floor at 20 ms, judge only slow (> 0.2 s) texts
                    ratio = t_l / max(prev, 0.02)
                    if ratio > args.max_ratio and t_l > 0.2:  # confirm both sizes once more
                        t_l = min(_time(fn, text) for _ in range(3))
                        ratio = t_l / max(min(_time(fn, piece * (size // 4)) for _ in range(3)), 0.02)
                if t_l > args.max_seconds or (ratio > args.max_ratio and t_l > 0.2) or size >= reps:
                    break
                prev, size = t_l, min(reps, size * 4)
            if t_l > worst[name][1]:
                worst[name] = (ratio, t_l, piece)
            if t_l > args.max_seconds or (ratio > args.max_ratio and t_l > 0.2):
                failures.append(f"{name}: {piece!r} x {size}: {t_l:.2f} s, 4x ratio {ratio:.1f}")
                raise AssertionError(failures[-1])

        try:
            case()
        except BaseException as exc:  # AssertionError, or hypothesis' group of them
            if not failures or isinstance(exc, KeyboardInterrupt):
                raise
        r, t, piece = worst[name]
        print(f"{name:<26} {examples[0]:4d} texts, slowest {t * 1e3:7.1f} ms (4x ratio {r:4.1f})  unit {piece[:36]!r}",
              flush=True)

    if failures:
        print("\nFAILED (super-linear parse):")
        print("\n".join(failures))
        return 1
    print(f"\nall {len(fns)} parsers linear on the fuzzed inputs (length {args.length}, ratio <= {args.max_ratio}, "
          f"time <= {args.max_seconds} s); measured on a shared, loaded 2-core machine")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
