"""The node's software version, as it reports it (/status `version`, the metric
`metaquorum_build_info{version=...}`, `metaquorum --version`).

Role: one place for the version string the operator's upgrade logic reads from every pod
(operator/metaquorum_operator/upgrades.py compares them). Kafka has no field for it in a
response: ApiVersions' ClientSoftwareName/Version (KIP-511) travel in the *request*, from
client to server, so a server's version is not on the wire; hence the HTTP listener.

The version is the package's (`metaquorum.__version__`, from pyproject.toml), unless the
environment variable METAQUORUM_VERSION_OVERRIDE is set (non-empty): the e2e tier builds a
second image of the same code reporting another version that way (e2e/tools/build_images.py,
the `node-next` variant). Invariant: read at call time, never cached.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import metaquorum

SOFTWARE_NAME = "metaquorum"
OVERRIDE_ENV = "METAQUORUM_VERSION_OVERRIDE"


def software_version(environ: Mapping[str, str] | None = None) -> str:
    """The version this node reports: the override when set, else the package version."""
    env = os.environ if environ is None else environ
    return env.get(OVERRIDE_ENV, "").strip() or metaquorum.__version__
