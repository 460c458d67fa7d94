"""Which CPython runs our nodes in a benchmark, and how it was built (issue 28).

Role: the interpreter is a choice, not an accident (`scripts/fast-python.sh` picks the one
`make setup` builds the venv on), so every bench report names it: path, version, whether
libpython is linked into the executable or loaded as a shared library (a shared libpython costs
every call through the PLT; Debian's /usr/bin/python3.x is the static, PGO+LTO build), the
configure flags that matter, whether our compiled hot path (mypyc) is in use, and the time of a
fixed pure-Python loop so two reports' interpreters compare at a glance.

Invariant: describing never changes the interpreter's state (no imports of our node code beyond
checking where a module was loaded from).
"""

from __future__ import annotations

import importlib.util
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any


def _libpython_shared() -> bool:
    """True when this process mapped a libpython shared object (not linked statically)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return bool(sysconfig.get_config_var("Py_ENABLE_SHARED"))
    return "libpython" in maps


def loop_ms(n: int = 1_000_000) -> float:
    """CPU ms of a fixed loop of arithmetic and dict stores (best of 3)."""
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        d: dict[int, int] = {}
        s = 0
        for i in range(n):
            s += i * i % 7
            d[i & 1023] = s
        best = min(best, time.process_time() - t)
    return round(best * 1000, 1)


def compiled_modules() -> list[str]:
    """Our packages that have compiled extension modules (mypyc) next to their .py files."""
    spec = importlib.util.find_spec("metaquorum")
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(next(iter(spec.submodule_search_locations)))
    found = {
        p.parent.relative_to(root.parent).as_posix().replace("/", ".") for p in root.rglob("*.so")
    }
    return sorted(found)


def describe() -> dict[str, Any]:
    args = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    return {
        "executable": sys.executable,
        "realpath": str(Path(sys.executable).resolve()),
        "version": sys.version.split()[0],
        "libpython": "shared" if _libpython_shared() else "static",
        "configure_pgo": "--enable-optimizations" in args,
        "configure_lto": "--with-lto" in args,
        "debian_build": str(Path(sys.executable).resolve()).startswith("/usr/bin/python3"),
        "compiled": compiled_modules(),
        "loop_ms": loop_ms(),
    }


def summary(info: dict[str, Any]) -> str:
    """One line for the report."""
    if not info:
        return "interpreter not recorded"
    how = (
        "Debian's build (PGO+LTO, static libpython)"
        if info.get("debian_build")
        else (
            f"libpython {info.get('libpython')}, "
            f"PGO {'yes' if info.get('configure_pgo') else 'no'}, "
            f"LTO {'yes' if info.get('configure_lto') else 'no'}"
        )
    )
    comp = ", ".join(info.get("compiled") or []) or "none (pure Python)"
    return (
        f"CPython {info.get('version')} at {info.get('realpath')}: {how}; compiled modules: "
        f"{comp}; 1M-iteration loop {info.get('loop_ms')} ms"
    )


if __name__ == "__main__":
    print(summary(describe()))
