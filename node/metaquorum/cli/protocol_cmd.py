"""`metaquorum protocol`: decode and encode Kafka KRaft messages from the command line.

    metaquorum protocol decode MESSAGE VERSION HEX    -> the message as Kafka's JsonConverter JSON
    metaquorum protocol encode MESSAGE VERSION JSON   -> the message's bytes as hex
    metaquorum protocol decode|encode --batch         -> one "MESSAGE VERSION HEX|JSON" per stdin
                                                         line, one result (or error) line each

A message whose body is empty (zero bytes: ApiVersionsRequest v0-v2) decodes from no HEX at
all (`decode ApiVersionsRequest 0`, or the line `ApiVersionsRequest 0` in --batch mode) and
encodes to an empty line.
    metaquorum protocol list                          -> the messages and versions we speak

MESSAGE is Kafka's message name (VoteRequest, FetchResponse, VotersRecord, LeaderChangeMessage,
RequestHeader, QuorumStateData, ...; the class name, e.g. VoteRequestData, works too).
Exit codes: 0 ok; 1 bad input (single mode: one line on stderr saying what to fix; batch mode:
an "error: ..." line in place of that result, processing goes on, exit 1 at the end).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from metaquorum.protocol.errors import ProtocolError
from metaquorum.protocol.json_form import dumps, from_json, to_json
from metaquorum.protocol.messages import MESSAGES

_BY_CLASS = {cls.__name__: cls for cls in MESSAGES.values()}


class BadInput(Exception):
    """Input the user must fix; the message says how."""


def _message_class(name: str) -> Any:
    cls = MESSAGES.get(name) or _BY_CLASS.get(name)
    if cls is None:
        known = ", ".join(sorted(MESSAGES))
        raise BadInput(f"unknown message {name!r}; use one of: {known}")
    return cls


def _version(cls: Any, text: str) -> int:
    try:
        version = int(text)
    except ValueError:
        raise BadInput(f"version must be an integer, got {text!r}") from None
    lo, hi = cls.LOWEST_SUPPORTED_VERSION, cls.HIGHEST_SUPPORTED_VERSION
    if not lo <= version <= hi:
        raise BadInput(f"{cls.NAME} has versions {lo}-{hi}, not {version}")
    return version


def _hex(text: str) -> bytes:
    cleaned = "".join(text.split())
    if cleaned[:2].lower() == "0x":
        cleaned = cleaned[2:]
    try:
        return bytes.fromhex(cleaned)
    except ValueError:
        raise BadInput("HEX must be hexadecimal digits (spaces allowed), e.g. 0000000100") from None


def decode_one(message: str, version_text: str, payload: str) -> str:
    cls = _message_class(message)
    version = _version(cls, version_text)
    data = _hex(payload)
    try:
        value = cls.decode(data, version)
    except ProtocolError as exc:
        raise BadInput(f"cannot decode {cls.NAME} v{version}: {exc}") from None
    return dumps(to_json(value, version))


def encode_one(message: str, version_text: str, payload: str) -> str:
    cls = _message_class(message)
    version = _version(cls, version_text)
    try:
        obj = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise BadInput(f"JSON is not valid: {exc}") from None
    try:
        value = from_json(cls, obj, version)
        return str(value.encode(version).hex())
    except ProtocolError as exc:
        raise BadInput(f"cannot encode {cls.NAME} v{version}: {exc}") from None


def _run_batch(op: Any, stdin: TextIO, stdout: TextIO) -> int:
    rc = 0
    for lineno, line in enumerate(stdin, 1):
        text = line.strip()
        if not text:
            continue
        parts = text.split(None, 2)
        if len(parts) == 2 and op is decode_one:
            parts.append("")  # an empty body (ApiVersionsRequest v0-v2): zero bytes
        try:
            if len(parts) != 3:
                raise BadInput("expected 'MESSAGE VERSION HEX|JSON'")
            result = op(*parts)
        except BadInput as exc:
            result = f"error: line {lineno}: {exc}"
            rc = 1
        stdout.write(result + "\n")
        stdout.flush()
    return rc


def _command(op: Any, what: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        if args.batch:
            if args.message is not None:
                print(f"error: --batch reads 'MESSAGE VERSION {what}' lines from stdin; "
                      "give no positional arguments", file=sys.stderr)  # fmt: skip
                return 1
            return _run_batch(op, sys.stdin, sys.stdout)
        payload = args.payload
        if payload is None and op is decode_one and args.version is not None:
            payload = ""  # an empty body (ApiVersionsRequest v0-v2) has no hex digits to give
        if args.message is None or args.version is None or payload is None:
            print(f"error: give MESSAGE VERSION {what} (or --batch)", file=sys.stderr)
            return 1
        try:
            print(op(args.message, args.version, payload))
        except BadInput as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0

    return run


def _list(args: argparse.Namespace) -> int:
    for name, cls in MESSAGES.items():
        key = f"api key {cls.API_KEY}" if cls.API_KEY >= 0 else ""
        lo, hi = cls.LOWEST_SUPPORTED_VERSION, cls.HIGHEST_SUPPORTED_VERSION
        print(f"{name:<28} v{lo}-{hi:<4} {key}".rstrip())
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "protocol",
        help="decode/encode Kafka KRaft messages (hex <-> Kafka's JSON form)",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    sub = parser.add_subparsers(dest="protocol_command", metavar="{decode,encode,list}")
    sub.required = True
    for name, op, what, helptext in (
        ("decode", decode_one, "HEX", "bytes (hex) -> JSON as Kafka's JsonConverter writes it"),
        ("encode", encode_one, "JSON", "Kafka's JSON form -> bytes (hex)"),
    ):
        p = sub.add_parser(name, help=helptext, description=helptext)
        p.add_argument("message", nargs="?", metavar="MESSAGE", help="e.g. VoteRequest")
        p.add_argument("version", nargs="?", metavar="VERSION", help="message version")
        p.add_argument("payload", nargs="?", metavar=what)
        p.add_argument(
            "--batch",
            action="store_true",
            help=f"read 'MESSAGE VERSION {what}' lines from stdin, write one result per line",
        )
        p.set_defaults(func=_command(op, what))
    lst = sub.add_parser("list", help="the messages and versions metaquorum speaks")
    lst.set_defaults(func=_list)
