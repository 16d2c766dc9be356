"""Training seeds as an axis (what `vpo demo --seeds` writes): a group whose members are runs of
different policies, one per training seed, under the same sampling settings. `vpo show` reads it as
the mean over training seeds with both standard errors, `vpo compare` of two groups pairs (problem,
training seed), and a member that is not the policy the marker names, or not run like the others, is
refused in one line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vpo_harness.harness.app.cli import main
from vpo_harness.harness.core.metrics import crossed_estimate
from vpo_harness.harness.core.seed_groups import MARKER, group_state, register_training_seeds
from vpo_harness.harness.core.store import RunStore, RunStoreError
from tests.harness.test_seed_groups import LIMIT, _per_problem, _run, seedy  # noqa: F401  (seedy: a fixture)

#: the "policy" of each training seed of two methods: seedy:P replies right with probability P
WEAK = {0: "seedy:0.3", 1: "seedy:0.2", 2: "seedy:0.4"}
STRONG = {0: "seedy:0.8", 1: "seedy:0.7", 2: "seedy:0.9"}


def _group(root: Path, name: str, models: dict[int, str]) -> Path:
    """One plain run per training seed (sampling seed 0), then the group over them."""
    members = {}
    for ts, model in models.items():
        folder = root / f"{name}@{ts}"
        assert _run(folder, model, extra=()) == 0
        members[ts] = folder
    ident = {ts: RunStore(f).read_config()["identity"] for ts, f in members.items()}
    group = root / "seeds" / name
    register_training_seeds(group, members, {ts: i["model"]["spec"] for ts, i in ident.items()}, ident[0])
    return group


@pytest.fixture()
def groups(tmp_path: Path, seedy) -> tuple[Path, Path]:  # noqa: F811
    return _group(tmp_path, "weak", WEAK), _group(tmp_path, "strong", STRONG)


def test_show_is_the_mean_over_training_seeds_with_both_errors(groups, capsys) -> None:
    weak, _ = groups
    state = group_state(weak)
    assert state.axis == "training" and [s for s, _ in state.runs] == [0, 1, 2]
    capsys.readouterr()
    assert main(["show", str(weak), "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    got = got[0] if isinstance(got, list) else got
    best1 = got["metrics"]["best@1"]
    means, ses = [], []
    for ts in (0, 1, 2):
        v = np.array(list(_per_problem(weak.parent.parent / f"weak@{ts}").values()))
        means.append(v.mean())
        ses.append(v.std(ddof=1) / np.sqrt(v.size))
    assert best1["mean"] == pytest.approx(np.mean(means))
    # each training run one draw: the seed and problem mean squares of the (seed x problem) grid
    x = np.stack([np.array(list(_per_problem(weak.parent.parent / f"weak@{ts}").values())) for ts in (0, 1, 2)])
    S, M = x.shape
    ms_seed = M * np.sum((x.mean(1) - x.mean()) ** 2) / (S - 1)
    ms_prob = S * np.sum((x.mean(0) - x.mean()) ** 2) / (M - 1)
    assert best1["stderr"] == pytest.approx(np.sqrt((ms_seed + ms_prob) / (S * M)))
    assert best1["stderr"] > np.sqrt(np.sum(np.square(ses))) / 3      # wider than pairs taken as independent
    assert best1["df"] == pytest.approx((ms_seed + ms_prob) ** 2 / (ms_seed ** 2 / (S - 1) + ms_prob ** 2 / (M - 1)))
    assert best1["seed_stderr"] == pytest.approx(np.std(means, ddof=1) / np.sqrt(3))
    assert main(["show", str(weak)]) == 0
    text = capsys.readouterr().out
    assert "(3 training seeds)" in text and "between training seeds" in text


def test_compare_pairs_problem_and_training_seed(groups, capsys) -> None:
    weak, strong = groups
    capsys.readouterr()
    assert main(["compare", str(weak), str(strong), "--json", "--resamples", "300", "--strategies", ""]) == 0
    best1 = next(r for r in json.loads(capsys.readouterr().out)["rows"] if r["metric"] == "best" and r["k"] == 1)
    diffs, per_seed = [], []
    for ts in (0, 1, 2):  # seed ts of one method pairs with seed ts of the other, maze by maze
        pa = _per_problem(weak.parent.parent / f"weak@{ts}")
        pb = _per_problem(strong.parent.parent / f"strong@{ts}")
        d = np.array([pb[p] - pa[p] for p in pa])
        diffs.append(d)
        per_seed.append(d.mean())
    alld = np.concatenate(diffs)
    assert best1["n"] == LIMIT * 3 and best1["n_seeds"] == 3
    assert best1["diff"] == pytest.approx(alld.mean())
    assert best1["diff_seed_se"] == pytest.approx(np.std(per_seed, ddof=1) / np.sqrt(3))
    # the interval treats each training run as one draw: the crossed estimate of the difference grid
    est = crossed_estimate(np.stack(diffs))
    assert best1["diff_se"] == pytest.approx(est.stderr)
    assert (best1["ci_low"], best1["ci_high"]) == pytest.approx(est.interval())
    assert main(["compare", str(weak), str(strong), "--resamples", "300", "--strategies", ""]) == 0
    text = capsys.readouterr().out
    assert "(problem, training seed) pairs" in text and "between training seeds" in text
    assert "each training run as one draw" in text


def test_a_member_holding_another_policy_is_one_line(groups, capsys) -> None:
    weak, _ = groups
    marker = json.loads((weak / MARKER).read_text())
    marker["models"]["1"] = "seedy:0.9"  # the folder holds seedy:0.2
    (weak / MARKER).write_text(json.dumps(marker))
    with pytest.raises(RunStoreError, match=r"not training seed 1 .*identity\.model\.spec"):
        group_state(weak)
    capsys.readouterr()
    assert main(["show", str(weak)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "weak@1" in err[0] and "Traceback" not in err[0]


def test_a_member_sampled_otherwise_is_refused(groups, tmp_path: Path) -> None:
    weak, _ = groups
    other = tmp_path / "weak-seed5"
    assert _run(other, WEAK[2], extra=("--seed", "5")) == 0
    marker = json.loads((weak / MARKER).read_text())
    marker["members"]["2"] = "../../weak-seed5"
    (weak / MARKER).write_text(json.dumps(marker))
    with pytest.raises(RunStoreError, match=r"not a member .*identity\.sampling"):
        group_state(weak)


def test_no_sampling_seed_joins_it_and_compare_refuses_mixed_axes(groups, tmp_path: Path, capsys) -> None:
    weak, strong = groups
    capsys.readouterr()
    assert _run(weak, WEAK[0], extra=("--seed", "3")) != 0
    assert "training-seed group" in capsys.readouterr().err
    sampled = tmp_path / "sampled"
    assert _run(sampled, "seedy:0.5", extra=("--seeds", "0,1")) == 0
    capsys.readouterr()
    assert main(["compare", str(weak), str(sampled), "--resamples", "300", "--strategies", ""]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "training-seed group" in err[0]
    with pytest.raises(RunStoreError, match="sampling seeds"):
        register_training_seeds(sampled, {0: weak.parent.parent / "weak@0"}, {0: WEAK[0]},
                                RunStore(weak.parent.parent / "weak@0").read_config()["identity"])
