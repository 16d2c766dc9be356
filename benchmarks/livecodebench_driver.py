"""LiveCodeBench test driver. Runs INSIDE the sandbox child (as the unprivileged uid); the sandbox
receives this file's text as its driver and exec's it once per zygote (``warm`` does the imports).

It only *executes*: it turns the program into a callable the way LiveCodeBench's ``testing_util``
does, runs the tests under a per-test timer and emits the raw outcome (captured stdout, or the
encoded return value) per test. Judging happens in the parent (benchmarks/livecodebench_judge.py), so
the expected outputs never enter the process that runs untrusted code and a program cannot forge a
pass. Inputs arrive in the payload over the sandbox's pipe; the program reads them as its stdin.

Payload: {"code": str, "mode": "stdin"|"functional", "func_name": str|None, "inputs": [str],
"timeout_s": float, "wall_factor": float, "out_cap": int, "first_failure": bool}. Records:
{"kind": "compile", "status": "ok"|"error"|"timeout"}, then one {"kind": "test", "i", "status":
"ok"|"error"|"timeout"|"output_limit", "out", "err", "t"} per test run, and {"kind": "restart",
"at": j} when the remaining tests need a fresh process (threads of a timed-out test still running).
With ``first_failure`` the driver stops after the first test that did not run cleanly; a wrong
answer is only known to the parent, which then ends the run (the sandbox's ``STOP``).
"""
import ast
import io
import json
import os
import signal
import sys
import threading
import time
import types

# LiveCodeBench prepends these imports to every program (testing_util.import_string): star imports of
# the listed modules, plain imports of all but the last two, and a high recursion limit.
_PRELUDE_MODULES = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math",
                    "random", "statistics", "itertools", "functools", "operator", "io", "sys", "json",
                    "builtins", "typing")
PRELUDE = ("".join(f"from {m} import *\n" for m in _PRELUDE_MODULES)
           + "".join(f"import {m}\n" for m in _PRELUDE_MODULES[:-2])
           + "sys.setrecursionlimit(50000)\n")


#: LiveCodeBench's evaluator raises Python's int<->str digit limit for the whole grading process
INT_MAX_STR_DIGITS = 50000


def warm():
    """Imports done once in the zygote, so no child pays for them."""
    for m in _PRELUDE_MODULES:
        __import__(m)
    compile(PRELUDE, "<prelude>", "exec")


class _Timeout(BaseException):
    """Raised by the per-test timer. A BaseException, so ``except Exception`` in a program cannot
    swallow it (a bare ``except:`` still can; the parent's wall/CPU limits catch that case)."""


class _OutputLimit(BaseException):
    pass


def _arm(timeout, wall_factor):
    """Per-test limit: ``timeout`` seconds of CPU time (all threads; SIGPROF) and ``timeout *
    wall_factor`` seconds of wall time (SIGALRM). With wall_factor 1 (the default) this is LCB's
    wall-clock limit; a larger factor makes CPU time decide, so load does not cause time limits."""
    signal.setitimer(signal.ITIMER_PROF, timeout)
    signal.setitimer(signal.ITIMER_REAL, timeout * wall_factor)


def _disarm():
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.setitimer(signal.ITIMER_PROF, 0)


def _on_alarm(signum, frame):
    raise _Timeout()


class _Capture(io.StringIO):
    """stdout replacement: bounded (a print flood ends the test, not the machine), close() a no-op."""

    def __init__(self, cap):
        super().__init__()
        self._cap, self._n = cap, 0

    def write(self, s):
        self._n += len(s)
        if self._n > self._cap:
            raise _OutputLimit()
        return super().write(s)

    def close(self):
        pass


def _strip_main_guard(code):
    """LCB's clean_if_name: a trailing ``if __name__ == '__main__':`` is replaced by its body."""
    try:
        tree = ast.parse(code)
        last = tree.body[-1]
        if isinstance(last, ast.If) and ast.unparse(last.test).strip() == "__name__ == '__main__'":
            return ast.unparse(tree.body[:-1]) + "\n" + ast.unparse(last.body)
    except Exception:
        pass
    return code


def _wrap_stdin_program(code):
    """LCB's make_function: top-level imports stay, every other statement becomes the body of
    ``wrapped_function()``, which is then called once per test with stdin/stdout redirected."""
    tree = ast.parse(code)  # SyntaxError propagates: compile error
    imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    body = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))] or [ast.Pass()]
    fn = ast.FunctionDef(name="wrapped_function", args=ast.arguments(
        posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=body,
        decorator_list=[], returns=None, type_comment=None, lineno=1)
    return PRELUDE + "\n" + ast.unparse(imports) + "\n" + ast.unparse(fn)


def _encode(v, depth=0):
    """JSON form of a return value that keeps what ``==`` against a json.loads value depends on."""
    if depth > 200:
        return {"o": "<too deep>"}
    if v is None or isinstance(v, (bool, int, float, str)):
        if type(v) not in (bool, int, float, str, type(None)):  # subclasses such as IntEnum
            v = (bool if isinstance(v, bool) else int if isinstance(v, int) else
                 float if isinstance(v, float) else str)(v)
        return v
    if isinstance(v, list):
        return [_encode(x, depth + 1) for x in v]
    if isinstance(v, tuple):
        return {"t": [_encode(x, depth + 1) for x in v]}
    if isinstance(v, dict):
        return {"d": [[_encode(k, depth + 1), _encode(x, depth + 1)] for k, x in v.items()]}
    if isinstance(v, (set, frozenset)):
        return {"s": [_encode(x, depth + 1) for x in v]}
    item = getattr(v, "item", None)  # numpy scalars compare equal to the Python number
    if callable(item) and getattr(v, "shape", None) == ():
        try:
            return _encode(item(), depth + 1)
        except Exception:
            pass
    try:
        r = repr(v)[:200]
    except BaseException:
        r = "<unrepresentable>"
    return {"o": type(v).__name__ + ":" + r}


def _err(exc):
    try:
        return (type(exc).__name__ + ": " + str(exc))[:300]
    except BaseException:
        return type(exc).__name__


def _join_new_threads(before):
    """A real process prints what its non-daemon threads print before it exits (the interpreter
    joins them); LCB returns at once and loses that output when the thread is slower than LCB's
    cleanup. Joining them here, under the test's timer, gives the program's real output."""
    me = threading.current_thread()
    for t in threading.enumerate():
        if t not in before and t is not me and not t.daemon:
            t.join()


def main(payload, emit):
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGPROF, _on_alarm)
    sys.set_int_max_str_digits(INT_MAX_STR_DIGITS)
    code, mode = payload["code"], payload["mode"]
    inputs, timeout = payload["inputs"], float(payload["timeout_s"])
    wall_factor = float(payload.get("wall_factor", 1.0))
    out_cap = int(payload.get("out_cap", 1 << 20))
    first_failure = bool(payload.get("first_failure"))
    real_stdout, real_stdin = sys.stdout, sys.stdin

    # ---- compile: the program becomes a callable (LCB's compile_code) ----------------------------
    _arm(timeout, wall_factor)
    try:
        sys.stdout = _Capture(out_cap)
        if mode == "stdin":
            src = _wrap_stdin_program(_strip_main_guard(code))
        else:
            src = PRELUDE + "\n\n" + code
        mod = types.ModuleType("tmp_sol", "")
        exec(compile(src, "<solution>", "exec"), mod.__dict__)
        if mode == "stdin":
            method = mod.wrapped_function
        else:
            target = mod.Solution() if "class Solution" in src else mod
            method = getattr(target, payload["func_name"])
        _disarm()
    except _Timeout:
        _disarm()
        emit({"kind": "compile", "status": "timeout", "err": "timeout while loading the program"})
        return
    except BaseException as exc:
        _disarm()
        emit({"kind": "compile", "status": "error", "err": _err(exc)})
        return
    finally:
        sys.stdout = real_stdout
    emit({"kind": "compile", "status": "ok"})

    # ---- tests ---------------------------------------------------------------------------------
    for i, inp in enumerate(inputs):
        rec = {"kind": "test", "i": i}
        cap = _Capture(out_cap)
        saved = {}
        try:
            if mode == "functional":
                args = [json.loads(line) for line in inp.split("\n")]
            else:
                # LCB: sys.stdin becomes a StringIO of the input; the original stdin object (the one
                # `from sys import *` bound as `stdin`) gets readline/readlines/read patched.
                lines = iter(inp.split("\n"))
                for name, fn in (("readline", lambda *a: next(lines)),
                                 ("readlines", lambda *a: inp.split("\n")),
                                 ("read", lambda *a: inp)):
                    try:
                        saved[name] = real_stdin.__dict__.get(name)
                        setattr(real_stdin, name, fn)
                    except (AttributeError, TypeError):
                        pass
                sys.stdin = io.TextIOWrapper(io.BytesIO(inp.encode("utf-8", "surrogatepass")),
                                             encoding="utf-8", errors="surrogatepass")
            sys.stdout = cap
            t0 = time.perf_counter()
            _arm(timeout, wall_factor)
            try:
                if mode == "functional":
                    value = method(*args)
                else:
                    before = set(threading.enumerate())
                    try:
                        method()
                    except SystemExit:  # exit() ends the program normally, as in LCB
                        pass
                    _join_new_threads(before)
            finally:
                _disarm()
            rec["t"] = round(time.perf_counter() - t0, 6)
            sys.stdout = real_stdout
            if mode == "functional":
                text = json.dumps(_encode(value))
                if len(text) > out_cap:
                    raise _OutputLimit()
                rec.update(status="ok", out=text)
            else:
                rec.update(status="ok", out=cap.getvalue())
        except _Timeout:
            rec.update(status="timeout", err="per-test time limit")
        except _OutputLimit:
            rec.update(status="output_limit", err="output over the cap")
        except BaseException as exc:
            rec.update(status="error", err=_err(exc))
        finally:
            _disarm()
            sys.stdout, sys.stdin = real_stdout, real_stdin
            for name, old in saved.items():
                try:
                    if old is None:
                        delattr(real_stdin, name)
                    else:
                        setattr(real_stdin, name, old)
                except (AttributeError, TypeError):
                    pass
        emit(rec)
        if first_failure and rec["status"] != "ok":
            return
        if rec["status"] == "timeout" and threading.active_count() > 1:
            # threads of the timed-out test still run and would slow (or print into) the next
            # tests: ask for a fresh process (a fork of the zygote) for the remaining ones
            emit({"kind": "restart", "at": i + 1})
            return
