"""What isolation this machine can give a sandboxed child, probed once per process, and the policy
for when the sealed view is unavailable.

Why probe instead of assume: CI and our machines run as root (PID/network/mount namespaces, a sealed
root via pivot_root, dropping to an unprivileged uid all work), laptops usually do not (no root;
maybe unprivileged user namespaces). The probe starts a real zygote that seals itself, so "sealed"
means the exact setup every run uses worked here. Without it, grading is refused (one clear error)
unless the caller opted into an unsafe sandbox (``--unsafe-sandbox``): a "pass" from a program that
could read the expected outputs on disk is no evidence at all.
"""
from __future__ import annotations

import functools
import os
import shutil
from dataclasses import asdict, dataclass, field
from typing import Any

#: nobody/nogroup; the default unprivileged identity of a sandboxed child
NOBODY = 65534
_UNSAFE = {"allowed": False}


class SandboxUnavailable(RuntimeError):
    """The sealed sandbox cannot be set up on this machine and no unsafe fallback was allowed."""


def allow_unsafe(flag: bool = True) -> None:
    """Process-wide opt-in to grading without the sealed view (the CLI's ``--unsafe-sandbox``)."""
    _UNSAFE["allowed"] = bool(flag)


def unsafe_allowed(explicit: bool | None = None) -> bool:
    if explicit is not None:
        return explicit
    return _UNSAFE["allowed"] or os.environ.get("VPO_UNSAFE_SANDBOX") == "1"


@dataclass(frozen=True)
class Isolation:
    """The isolation level a run gets. ``unshare_argv`` prefixes the zygote's command line."""

    netns: bool = False
    pidns: bool = False
    mountns: bool = False
    userns: bool = False
    #: the child sees only the minimal pivot_root'ed tree (see _zygote.seal)
    sealed: bool = False
    #: whether the child can switch to an unprivileged uid (we are root)
    can_drop_privileges: bool = False
    unshare_argv: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["unshare_argv"] = list(self.unshare_argv)
        d["notes"] = list(self.notes)
        return d


def unavailable_message(iso: Isolation) -> str:
    why = "; ".join(iso.notes) or "unknown reason"
    return (f"sandbox: cannot set up the sealed filesystem view for generated code ({why}); refusing "
            "to grade. Run on a machine with namespaces (root, or unprivileged user namespaces), or "
            "pass --unsafe-sandbox to grade with rlimits and a separate uid only")


def _namespace_argv(root: bool, unshare: str) -> list[str]:
    # --kill-child: if unshare itself dies (the harness kills the zygote's session), PID 1 of the
    # new namespace is SIGKILLed, and with it every process in the namespace.
    ns = ["--net", "--pid", "--mount", "--ipc", "--uts", "--fork", "--kill-child"]
    return [unshare] + ([] if root else ["--user", "--map-root-user"]) + ns


@functools.lru_cache(maxsize=1)
def detect_isolation() -> Isolation:
    """Probe once: start a sealed zygote through util-linux ``unshare`` (as root, else inside a user
    namespace) and see it report ready."""
    root = os.geteuid() == 0
    if os.environ.get("VPO_SANDBOX_NO_NAMESPACES") == "1":
        return Isolation(can_drop_privileges=root,
                         notes=("namespaces disabled by VPO_SANDBOX_NO_NAMESPACES=1",))
    unshare = shutil.which("unshare")
    if unshare is None:
        return Isolation(can_drop_privileges=root, notes=("no unshare binary: no namespaces",))
    argv = _namespace_argv(root, unshare)
    from vpo_harness.harness.core.sandbox.zygote import probe_sealed  # late: zygote imports this module

    err = probe_sealed(argv)
    if err is None:
        notes = () if root else ("user namespace: uid 0 inside maps to the caller; no privilege drop",)
        return Isolation(netns=True, pidns=True, mountns=True, userns=not root, sealed=True,
                         can_drop_privileges=root, unshare_argv=tuple(argv), notes=notes)
    return Isolation(can_drop_privileges=root, notes=(f"sealed zygote failed: {err}",))
