"""Fixtures the operator suites share: what cadc and gcc make of an
operator's source, and the corpus's inputs and gcc's results, made once a
session for the host and the kernel halves."""

import pytest

from test_op_corpus import Prepared
from test_ops import Builds


@pytest.fixture(scope="session")
def op_builds(build_dir, tmp_path_factory):
    return Builds(build_dir, tmp_path_factory.mktemp("op-builds"))


@pytest.fixture(scope="session")
def corpus_prepared(build_dir, tmp_path_factory):
    return Prepared(build_dir, tmp_path_factory.mktemp("corpus"))
