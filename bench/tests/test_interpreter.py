"""The bench report names the interpreter our nodes ran on (issue 28)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench import interpreter

REPO = Path(__file__).resolve().parents[2]


def test_describe_names_this_interpreter_and_times_a_loop() -> None:
    info = interpreter.describe()
    assert info["realpath"] == str(Path(sys.executable).resolve())
    assert info["version"] == sys.version.split()[0]
    assert info["libpython"] in ("shared", "static")
    assert info["loop_ms"] > 0
    line = interpreter.summary(info)
    assert info["version"] in line and info["realpath"] in line


def test_summary_says_how_a_non_debian_build_was_configured() -> None:
    info = {
        "version": "3.11.7",
        "realpath": "/opt/py/bin/python3.11",
        "libpython": "shared",
        "configure_pgo": False,
        "configure_lto": True,
        "debian_build": False,
        "compiled": ["metaquorum.core"],
        "loop_ms": 95.0,
    }
    line = interpreter.summary(info)
    assert "libpython shared, PGO no, LTO yes" in line
    assert "compiled modules: metaquorum.core" in line


def test_setup_picks_debians_interpreter_when_present() -> None:
    """scripts/fast-python.sh: PYTHON= wins; else Debian's PGO/LTO /usr/bin/python3.11."""
    script = REPO / "scripts" / "fast-python.sh"
    env_choice = subprocess.run(
        [str(script)],
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(env_choice).resolve() == Path(sys.executable).resolve()
    bad = subprocess.run(
        [str(script)],
        env={"PATH": "/usr/bin:/bin", "PYTHON": "/bin/false"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode != 0 and "PYTHON=/bin/false" in bad.stderr
    if Path("/usr/bin/python3.11").exists():
        default = subprocess.run(
            [str(script)],
            env={"PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert default == "/usr/bin/python3.11"
