"""Evaluation: a model on a task's problems, scored, in a run folder, on the floor above the tasks
(what lives here and the layers around it: docs/layers.md).
"""
