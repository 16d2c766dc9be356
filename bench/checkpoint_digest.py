"""What the whole-file checkpoint digest costs (harness/core/digests.py, through
vpo_harness.harness.core.models.zoo.fingerprint): a checkpoint folder of random bytes hashed the first time, then
fingerprinted again with every file's digest taken from the stat-keyed memo. Both in one run, on a
fresh cache root in a temporary folder; the page cache is warm for the first read (the bytes were
just written), so a cold disk adds its read time to the first figure.

    python3 bench/checkpoint_digest.py              # a 70 MB weights file
    python3 bench/checkpoint_digest.py --mb 1000
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout this file sits in runs (its vpo_harness/)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=70, help="size of the weights file (10^6 bytes)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "ckpt"
        folder.mkdir()
        (folder / "config.json").write_text("{}")
        with open(folder / "model.safetensors", "wb") as fh:
            for _ in range(args.mb):
                fh.write(os.urandom(10 ** 6))
        old = time.time() - 3600  # older than the memo's settle time, so it is remembered
        for f in folder.iterdir():
            os.utime(f, (old, old))
        os.environ["VPO_CACHE"] = str(Path(tmp) / "cache")
        from vpo_harness.harness.core.models import zoo

        t = time.perf_counter()
        first = zoo.fingerprint(str(folder))
        hashed = time.perf_counter() - t
        t = time.perf_counter()
        again = zoo.fingerprint(str(folder))
        memo = time.perf_counter() - t
    assert first == again, "the memo gave another digest"
    print(f"checkpoint digest, {args.mb} MB weights: hashed whole {hashed * 1000:.1f} ms, "
          f"from the memo {memo * 1000:.2f} ms ({hashed / memo:.0f}x)")


if __name__ == "__main__":
    main()
