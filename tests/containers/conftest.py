"""Fixtures of the containers tier (`make containers`, root): the node and operator OCI images
built by e2e/tools/build-images.sh (cached by content), unpacked with umoci for inspection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.containers.images import Image, build


@pytest.fixture(scope="session")
def images() -> dict[str, Image]:
    if os.geteuid() != 0:
        pytest.fail("the containers tier needs root (chroot, runc)")
    return build()


@pytest.fixture(scope="session")
def rootfs(images: dict[str, Image], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {n: img.unpack(tmp_path_factory.mktemp(n)) for n, img in images.items()}
