"""e2e/tools/dockerfile.py: the Dockerfile subset parser the scripted image build executes."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "e2e" / "tools"))
from dockerfile import (  # noqa: E402
    DockerfileError,
    copy_args,
    image_config,
    logical_lines,
    parse,
    parse_file,
)

SAMPLE = """\
# comment
FROM debian:bookworm-slim AS build
RUN echo a \\
    # a comment inside a continuation
    && echo b
FROM debian:bookworm-slim
COPY --from=build /wheels /wheels
COPY a.py b.py /opt/x/
USER 1000
WORKDIR /var/lib
WORKDIR data
ENV PATH=/opt/bin:$PATH A=1 \\
    B=${A}2
ENV LEGACY some value
EXPOSE 9093 53/udp
CMD ["x", "--help"]
"""


def test_continuations_and_comments_are_joined() -> None:
    lines = logical_lines(SAMPLE)
    assert lines[1] == (3, "RUN echo a && echo b")
    assert [n for n, _ in lines][:3] == [2, 3, 6]


def test_stages_and_config_follow_docker_semantics() -> None:
    stages = parse(SAMPLE)
    assert [(s.base, s.name) for s in stages] == [
        ("debian:bookworm-slim", "build"),
        ("debian:bookworm-slim", None),
    ]
    cfg = image_config(stages[1])
    assert cfg.user == "1000"
    assert cfg.workdir == "/var/lib/data"
    assert cfg.env["PATH"].startswith("/opt/bin:/usr/local/sbin:")
    assert cfg.env["B"] == "12"
    assert cfg.env["LEGACY"] == "some value"
    assert cfg.exposed == ["9093/tcp", "53/udp"]
    assert cfg.cmd == ["x", "--help"] and cfg.entrypoint == []
    assert copy_args(stages[1].ops("COPY")[0]) == ("build", ["/wheels"], "/wheels")
    assert copy_args(stages[1].ops("COPY")[1]) == (None, ["a.py", "b.py"], "/opt/x/")


def test_entrypoint_resets_an_earlier_cmd() -> None:
    cfg = image_config(parse('FROM x\nCMD ["a"]\nENTRYPOINT ["b"]\n')[0])
    assert (cfg.entrypoint, cfg.cmd) == (["b"], [])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("FROM x\nADD a /a\n", "line 2: ADD is not supported"),
        ("RUN true\n", "line 1: RUN before FROM"),
        ("FROM x\nCMD metaquorum --help\n", "line 2: CMD must be a JSON array"),
        ("FROM x\nCOPY --chown=1 a /a\n", "COPY --chown=1 is not supported"),
        ("FROM x\nRUN a \\\n", "continuation at end of file"),
        ("FROM a b\n", "is not 'image [AS name]'"),
    ],
)
def test_what_the_builder_cannot_honour_is_refused(text: str, message: str) -> None:
    with pytest.raises(DockerfileError, match=re.escape(message)):
        parse(text)


@pytest.mark.parametrize("dockerfile", ["node/Dockerfile", "operator/Dockerfile"])
def test_the_project_dockerfiles_parse(dockerfile: str) -> None:
    stages = parse_file(ROOT / dockerfile)
    assert [s.name for s in stages] == ["build", None]
    cfg = image_config(stages[-1])
    assert cfg.user == "1000"
    assert cfg.env["PATH"].startswith("/opt/metaquorum/venv/bin:")
