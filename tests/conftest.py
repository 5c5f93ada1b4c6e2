"""Shared pytest fixtures: where the CMake build is."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Modules the suites share: tests/ (std_algorithms), tests/kmod (vm).
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "kmod"))


@pytest.fixture(scope="session")
def build_dir() -> Path:
    """The CMake build directory (CAD_BUILD_DIR, default build/)."""
    return Path(os.environ.get("CAD_BUILD_DIR", ROOT / "build")).resolve()
