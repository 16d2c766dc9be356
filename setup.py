"""The package list, derived from the tree (pyproject.toml holds everything else).

One import namespace, one real folder: ``vpo_harness/`` at the checkout's root holds relative links to
the top-level folders (the layers of docs/layers.md), so ``vpo_harness.harness.core.metrics`` is the
file ``vpo_harness/harness/core/metrics.py`` (that is, ``harness/core/metrics.py``) for Python and for
every tool that reads files. No folder is remapped: a user's own ``benchmarks/`` or ``training/``
package never shadows the harness's, and ``import search`` finds nothing of ours once installed.
"""
from setuptools import find_packages, setup

setup(packages=find_packages(include=["vpo_harness", "vpo_harness.*"]))
