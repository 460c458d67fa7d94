"""The committed generated message modules equal a fresh generation from our schemas."""

from __future__ import annotations

from metaquorum.protocol import codegen


def test_generated_files_are_fresh() -> None:
    files = codegen.render_all()
    assert set(files) >= {"__init__.py", "vote.py", "fetch.py", "control.py"}
    stale = [
        name
        for name, text in files.items()
        if not (codegen.MESSAGES_DIR / name).exists()
        or (codegen.MESSAGES_DIR / name).read_text() != text
    ]
    assert stale == [], f"run `make generate`: stale {stale}"


def test_check_mode_reports_fresh() -> None:
    assert codegen.main(["--check"]) == 0
