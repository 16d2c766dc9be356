"""`vpo view`: a local, read-only web app over run folders (index, runs, problems, candidates, lineage).

Split by job so each piece is testable without a browser:

- :mod:`vpo_harness.reports.view.catalog` finds run folders and summarises each one for the index;
- :mod:`vpo_harness.reports.view.samples` indexes a samples.jsonl once (byte offsets, scores) and reads rows back
  on demand, so a 100k-candidate run is paged instead of loaded;
- :mod:`vpo_harness.reports.view.api` turns those into the JSON pages the browser asks for;
- :mod:`vpo_harness.reports.view.server` serves them and the static app on loopback (stdlib ``http.server``).
"""
from __future__ import annotations

from vpo_harness.reports.view.api import ViewData
from vpo_harness.reports.view.server import make_server

__all__ = ["ViewData", "make_server"]
