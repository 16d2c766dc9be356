"""Resource limits of one sandboxed run.

Kept as a plain frozen dataclass so a run's limits can be written verbatim into every result: a verdict
is only meaningful together with the budget it was produced under.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Per-candidate budget. ``wall_s`` and ``progress_s`` are enforced by the parent, ``memory_bytes``
    and ``processes`` by the candidate's cgroups, the rest by rlimits in the child."""

    #: wall-clock limit of the whole child (all tests); the parent kills the process group after it
    wall_s: float = 10.0
    #: RLIMIT_CPU (seconds of CPU over all threads); SIGXCPU ends the child when exceeded
    cpu_s: int = 10
    #: address space of each process (RLIMIT_AS): 1 GiB as AtCoder sets (the official LiveCodeBench
    #: grader sets none); enough for numpy and a 256 MiB thread stack. A big allocation fails fast
    #: (MemoryError) instead of being OOM-killed
    address_space_bytes: int = 1024 * MiB
    #: the candidate's memory budget (cgroup): everything its processes and threads touch, their tmpfs
    #: scratch pages and memfds, together. Exceeding it OOM-kills inside the candidate's group only, so
    #: one candidate cannot take more of the host than this, however many processes it forks
    memory_bytes: int = 1024 * MiB
    #: RLIMIT_FSIZE: largest file the program may write (in its private working directory)
    file_size_bytes: int = 16 * MiB
    #: RLIMIT_NOFILE
    open_files: int = 128
    #: processes + threads of the candidate: its cgroup's pids.max, and RLIMIT_NPROC of the sandbox uid
    #: (which only binds for a non-root uid: the child drops privileges, see isolation.py)
    processes: int = 64
    #: bytes of the child's stdout / stderr kept (the tail); reading stops after 8x this much
    output_cap_bytes: int = 64 * 1024
    #: bytes the driver may send on the result channel before the run counts as flooding it
    result_cap_bytes: int = 64 * MiB
    #: longest wall-clock gap (seconds) the parent allows between two valid records, and between the
    #: child's start and its first one (plus sandbox.START_GRACE_S); then it kills every process of the run. A per-test
    #: deadline that no signal handling or timer juggling inside the child can dodge (None: only wall_s)
    progress_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
