"""The package list, derived from the tree (pyproject.toml holds everything else).

One import namespace: the top-level folders keep their names in the checkout (the layers of
docs/layers.md) but install as ``vpo_harness.<folder>``, so a user's own ``benchmarks/`` or
``training/`` package never shadows the harness's, and ``import search`` finds nothing of ours.
"""
from setuptools import find_packages, setup

TOPS = ("harness", "benchmarks", "search", "training", "reports")

setup(
    packages=[f"vpo_harness.{p}" for p in find_packages(include=[f"{t}*" for t in TOPS]) if p.split(".")[0] in TOPS],
    package_dir={f"vpo_harness.{t}": t for t in TOPS},
)
