"""A parser for the subset of Dockerfile syntax that node/Dockerfile and operator/Dockerfile use.

Role: the Dockerfiles are the source of truth for the images; `build_images.py` builds them
without Docker by executing the final stage's instructions from this parse, and
tests/containers/test_images.py compares a built image with the same parse. Supported: comments,
backslash line continuations, FROM (with AS), RUN (shell form), COPY (with --from=), USER,
WORKDIR, ENV (key=value pairs, also the legacy `ENV key value`), EXPOSE, ENTRYPOINT and CMD (exec
form: JSON arrays). Anything else is refused with the line number, so a Dockerfile edit the
builder cannot honour fails loudly instead of producing a different image.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

KNOWN = {"FROM", "RUN", "COPY", "USER", "WORKDIR", "ENV", "EXPOSE", "ENTRYPOINT", "CMD"}
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class DockerfileError(ValueError):
    pass


@dataclass
class Instruction:
    line: int
    op: str
    value: str  # the arguments as written (continuations joined)

    def words(self) -> list[str]:
        return shlex.split(self.value)


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def ops(self, op: str) -> list[Instruction]:
        return [i for i in self.instructions if i.op == op]


@dataclass
class ImageConfig:
    """What the final stage leaves in the image's config (Docker's semantics for the subset)."""

    user: str = ""
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=lambda: {"PATH": DEFAULT_PATH})
    exposed: list[str] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """Join continuation lines; drop comments and blank lines. Returns (first line no, text)."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buf):
            continue
        if not buf:
            start = n
        if stripped.endswith("\\"):
            buf.append(stripped[:-1].strip())
            continue
        buf.append(stripped)
        out.append((start, " ".join(b for b in buf if b)))
        buf = []
    if buf:
        raise DockerfileError(f"line {start}: continuation at end of file")
    return out


def parse(text: str) -> list[Stage]:
    stages: list[Stage] = []
    for n, line in logical_lines(text):
        op, _, value = line.partition(" ")
        op = op.upper()
        if op not in KNOWN:
            raise DockerfileError(f"line {n}: {op} is not supported by the scripted build")
        if op == "FROM":
            words = value.split()
            if len(words) == 3 and words[1].upper() == "AS":
                stages.append(Stage(words[0], words[2]))
            elif len(words) == 1:
                stages.append(Stage(words[0], None))
            else:
                raise DockerfileError(f"line {n}: FROM {value!r} is not 'image [AS name]'")
            continue
        if not stages:
            raise DockerfileError(f"line {n}: {op} before FROM")
        ins = Instruction(n, op, value.strip())
        if op == "COPY":
            copy_args(ins)
        elif op in ("CMD", "ENTRYPOINT"):
            exec_form(ins)
        stages[-1].instructions.append(ins)
    if not stages:
        raise DockerfileError("no FROM")
    return stages


def parse_file(path: Path) -> list[Stage]:
    try:
        return parse(path.read_text())
    except DockerfileError as e:
        raise DockerfileError(f"{path}: {e}") from None


def exec_form(ins: Instruction) -> list[str]:
    try:
        value = json.loads(ins.value)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DockerfileError(f"line {ins.line}: {ins.op} must be a JSON array of strings")
    return value


def env_pairs(ins: Instruction, env: dict[str, str]) -> dict[str, str]:
    """ENV's pairs, with $VAR / ${VAR} expanded from the env so far (as Docker does)."""
    words = ins.words()
    if words and "=" not in words[0]:  # legacy form: ENV key value...
        return {words[0]: expand(" ".join(words[1:]), env)}
    out: dict[str, str] = {}
    for w in words:
        key, eq, val = w.partition("=")
        if not eq:
            raise DockerfileError(f"line {ins.line}: ENV {w!r} is not key=value")
        out[key] = expand(val, {**env, **out})
    return out


def expand(value: str, env: dict[str, str]) -> str:
    for key in sorted(env, key=len, reverse=True):
        value = value.replace("${" + key + "}", env[key]).replace("$" + key, env[key])
    return value


def image_config(stage: Stage) -> ImageConfig:
    """The config the stage's metadata instructions produce (the base's own config aside)."""
    cfg = ImageConfig()
    for ins in stage.instructions:
        if ins.op == "USER":
            cfg.user = ins.value
        elif ins.op == "WORKDIR":
            cfg.workdir = str(Path(cfg.workdir) / ins.value)
        elif ins.op == "ENV":
            cfg.env.update(env_pairs(ins, cfg.env))
        elif ins.op == "EXPOSE":
            cfg.exposed += [p if "/" in p else f"{p}/tcp" for p in ins.value.split()]
        elif ins.op == "ENTRYPOINT":
            cfg.entrypoint = exec_form(ins)
            cfg.cmd = []  # Docker resets an inherited CMD when ENTRYPOINT is set
        elif ins.op == "CMD":
            cfg.cmd = exec_form(ins)
    return cfg


def copy_args(ins: Instruction) -> tuple[str | None, list[str], str]:
    """COPY [--from=stage] src... dest -> (stage or None, sources, dest)."""
    words = ins.words()
    src_stage = None
    while words and words[0].startswith("--"):
        flag = words.pop(0)
        if flag.startswith("--from="):
            src_stage = flag.split("=", 1)[1]
        else:
            raise DockerfileError(f"line {ins.line}: COPY {flag} is not supported")
    if len(words) < 2:
        raise DockerfileError(f"line {ins.line}: COPY needs a source and a destination")
    return src_stage, words[:-1], words[-1]
