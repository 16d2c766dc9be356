"""The ground floor: what every other layer stands on and that knows no task. What lives here and
what it may import: docs/layers.md (the layer table, checked by tests/test_layers.py).
"""
