"""The ground floor: what every other layer stands on and that knows no task.

Run folders (store, rows, results), run identity (config, provenance), the estimators (metrics),
seeds and paths, the model backends (models/), the code sandbox (sandbox/) and where generation runs
(executors/). Nothing here imports benchmarks, harness.eval, training, search, reports or harness.app
(tests/test_layers.py; the layer table is docs/layers.md).
"""
