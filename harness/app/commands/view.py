"""`vpo view [RUNS_DIR ...]`: browse run folders in a local web app (index, problems, candidates, lineage),
or write the pages of chosen runs as static files (``--export DIR``)."""
from __future__ import annotations

import argparse
import errno
import sys
from pathlib import Path

EXAMPLES = """\
vpo view                          # every run folder under ./runs, at http://127.0.0.1:7575/
vpo view runs/demo runs/sweep --port 0 --open
vpo view runs --export shared/ --run maze-vpo --run maze-grpo   # static pages: open shared/index.html
"""

#: inspect_ai's viewer port, so a user of both finds it where expected
DEFAULT_PORT = 7575


def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("view", help="browse runs in a local web app: every sample, candidate and evolve lineage")
    p.add_argument("dirs", nargs="*", default=["runs"], metavar="RUNS_DIR",
                   help="folders searched (recursively) for run folders; a run folder itself works too (default: runs)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="port on 127.0.0.1; 0 picks a free one")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (127.0.0.1, ::1 or localhost)")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.add_argument("--log", action="store_true", help="print one line per request")
    p.add_argument("--all-metrics", action="store_true",
                   help="keep the metrics a task makes 0 by construction (Maze: pass@k, otherwise left out of the "
                        "index, the run pages and the curves with one note saying why)")
    p.add_argument("--export", metavar="DIR", default=None,
                   help="write the pages of the chosen runs as static files into DIR (new or empty), then exit; "
                        "they open from disk (file://) or any web server")
    p.add_argument("--run", action="append", default=[], metavar="NAME",
                   help="with --export: a run to export, by the name the index shows or its folder (repeatable; "
                        "default: every run found)")
    return p


def run(args: argparse.Namespace) -> int:
    from vpo_harness.reports.view import make_server
    from vpo_harness.reports.view.catalog import find_run_folders

    missing = [d for d in args.dirs if not Path(d).is_dir()]
    if missing:
        raise FileNotFoundError(f"{missing[0]}: no such folder (give the folder that holds your run folders)")
    if args.export:
        return _export(args)
    if args.run:
        raise ValueError("--run chooses the runs of --export; the server shows every run found")
    try:
        server = make_server(args.dirs, port=args.port, host=args.host, log=args.log,
                             all_metrics=getattr(args, "all_metrics", False))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise OSError(f"port {args.port} is in use on {args.host} (another vpo view?): "
                          "pass --port 0 for a free one, or --port N") from None
        raise
    n = len(find_run_folders(args.dirs))
    where = ", ".join(args.dirs)
    print(f"vpo view: {n} run folder{'s' if n != 1 else ''} under {where}; serving {server.url} (Ctrl-C stops)",
          file=sys.stderr, flush=True)
    if args.open:
        import webbrowser

        webbrowser.open(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _export(args: argparse.Namespace) -> int:
    from vpo_harness.reports.view import ViewData
    from vpo_harness.reports.view.export import ExportError, choose, export_site

    data = ViewData(args.dirs, getattr(args, "all_metrics", False))
    try:
        entries = choose(data, args.run)
        if not entries:
            raise ExportError(f"no run folders under {', '.join(args.dirs)}: nothing to export")
        stats = export_site(data, entries, args.export)
    except ExportError as exc:
        raise ValueError(str(exc)) from None
    index = Path(args.export).resolve() / "index.html"
    print(f"vpo view: exported {stats.runs} run{'s' if stats.runs != 1 else ''} ({stats.pages} pages) to {args.export}: "
          f"{stats.files} files, {stats.bytes / 1e6:.2f} MB; open {index.as_uri()}", file=sys.stderr, flush=True)
    return 0
