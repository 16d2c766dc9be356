"""Evaluation: a model on a task's problems, scored, in a run folder (runner), and the task-aware
selection metrics over stored pools (selection).

The first floor above the tasks: search (its plain-sampling baseline), reports and the app build on
it; it imports only benchmarks and harness.core (docs/layers.md).
"""
