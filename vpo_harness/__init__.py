"""The import name of the harness: ``vpo_harness.<folder>`` is the checkout's top-level ``<folder>/``.

The layers keep their folders at the checkout's root (docs/layers.md); this folder holds one relative
link per layer (``harness``, ``benchmarks``, ``search``, ``training``, ``reports``) and one to the
bundled ``checkpoints``, so the import name is a path that Python, pip, pyright, mypy and language
servers all follow in the same way. A wheel copies the linked folders in as real ones.

Because the folder sits at the checkout's root, whatever puts that root first on ``sys.path``
(``python -m`` from the root, a bench script's header, pytest's ``pythonpath``, a child's
``PYTHONPATH`` from :func:`vpo_harness.harness.core.paths.child_pythonpath`) runs this checkout,
whatever other copy is installed.
"""
