#!/usr/bin/env bash
# Mutation testing with mutmut 3 (not in CI's default path): do the tests notice when the code that
# computes the numbers is broken? Mutates best@k/pass@k/diversity (harness/core/metrics.py), the
# summarising code (runner.compute_results, the results reader, benchmarks/scoring.py), the VPO
# advantage estimators (training/advantages.py) and each task's reward function; prints killed /
# survived per module and the surviving mutants. `mutmut show NAME` shows one mutant's diff.
#
#   bash scripts/mutation.sh                 # the default scope below (~15-25 min on a loaded 2-core box)
#   bash scripts/mutation.sh 'harness.core.metrics.*'   # any mutmut mutant-name globs
# Needs the dev extra (pip install -e '.[dev]': mutmut). Runs under `nice`; works in ./mutants (ignored by git).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v mutmut >/dev/null || { echo "mutation.sh: mutmut is not installed: pip install -e '.[dev]'" >&2; exit 2; }

DEFAULT=(
  'harness.core.metrics.*'
  'harness.core.results.*'
  'harness.eval.runner.x_compute_results*'
  'benchmarks.scoring.*'
  'training.advantages.*'
  'benchmarks.maze_env.x_reward_from_counts*' 'benchmarks.maze_env.x_simulate*' 'benchmarks.maze_env.x_parse_moves*'
  'benchmarks.maze_env.x_is_move_token*'
  'benchmarks.musique.x_paper_*' 'benchmarks.musique.x_first_distinct*' 'benchmarks.musique.x_hop_scores*'
  'benchmarks.musique.x_cited_indices*' 'benchmarks.musique.xǁMuSiQueǁreward*' 'benchmarks.musique.xǁMuSiQueǁscalar*'
  'benchmarks.toolrl.x_value_match*' 'benchmarks.toolrl.x_align_calls*' 'benchmarks.toolrl.x_score_calls*'
  'benchmarks.toolrl.x_paper_*' 'benchmarks.toolrl.x__pnorm*' 'benchmarks.toolrl.x__number*'
  'benchmarks.toolrl.xǁToolRLǁreward*'
  'benchmarks.eureqa.xǁEureqaǁreward*' 'benchmarks.textnorm.*'
  'benchmarks.livecodebench.xǁLiveCodeBenchǁscore*' 'benchmarks.livecodebench.xǁLiveCodeBenchǁrewards*'
)
if [ "$#" -gt 0 ]; then GLOBS=("$@"); else GLOBS=("${DEFAULT[@]}"); fi

rm -rf mutants
# the import name is vpo_harness/'s links (docs/layers.md): copied as links, they point at mutants/'s own
# (mutated) folders; mutmut's also_copy would copy the linked folders' unmutated files instead
mkdir mutants && cp -a vpo_harness mutants/
# mutmut runs the tests from ./mutants, where ../shared/data is not next to the checkout any more
export VPO_SHARED_DATA="${VPO_SHARED_DATA:-$(cd .. && pwd)/shared/data}"
log=$(mktemp)
start=$(date +%s)
# mutmut draws a progress line per mutant: keep it in a log, print the summary
if ! nice -n 10 mutmut run --max-children "${VPO_MUTMUT_CHILDREN:-2}" "${GLOBS[@]}" >"$log" 2>&1; then
  tail -c 3000 "$log" >&2
  exit 1
fi
echo "mutmut finished in $(( $(date +%s) - start )) s"
# the status list goes through a file: thousands of lines overflow the argument list of python3
results="$log.results"
mutmut results --all true >"$results" 2>/dev/null
python3 - "$results" "${GLOBS[@]}" <<'PY'
import fnmatch, sys
from collections import Counter, defaultdict

lines, globs = open(sys.argv[1], encoding="utf-8").read().splitlines(), sys.argv[2:]
per: dict[str, Counter] = defaultdict(Counter)
survivors = []
for ln in lines:
    name, _, status = ln.strip().rpartition(": ")
    if not name or not any(fnmatch.fnmatchcase(name, g) for g in globs) or status == "not checked":
        continue
    module = name.split(".x")[0]
    per[module][status] += 1
    if status == "survived":
        survivors.append(name)
total = Counter()
print(f"{'module':<28}{'mutants':>8}{'killed':>8}{'survived':>9}{'no tests':>9}{'timeout':>8}  score")
for module, c in sorted(per.items()):
    total.update(c)
    n = sum(c.values())
    print(f"{module:<28}{n:>8}{c['killed']:>8}{c['survived']:>9}{c['no tests']:>9}{c['timeout']:>8}  "
          f"{c['killed'] / n:.0%}")
n = sum(total.values())
if n:
    print(f"{'total':<28}{n:>8}{total['killed']:>8}{total['survived']:>9}{total['no tests']:>9}"
          f"{total['timeout']:>8}  {total['killed'] / n:.0%}")
print(f"\nsurviving mutants ({len(survivors)}; `mutmut show NAME` for the diff):")
print("\n".join("  " + s for s in survivors))
PY
