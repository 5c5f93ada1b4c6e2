"""The commit-msg hook of .githooks, on messages that follow the convention
of docs/contributing.md and on each way of breaking it."""

import subprocess
from pathlib import Path

import pytest

HOOK = Path(__file__).resolve().parents[2] / ".githooks" / "commit-msg"
LONG = "vm: " + "x" * 69  # 73 characters


@pytest.mark.parametrize("message, error", [
    ("vm: fuse x + a*b into one loop\n\nWhy, what, how tested.\n", None),
    ("cadrt, cadc: comments state the rule\n\nBody.\n", None),
    ("docs: a subject\n\nBody.\n# Please enter the commit message\n", None),
    ("vm: " + "x" * 68 + "\n\nBody.\n", None),  # 72 characters
    ("Merge branch 'docs'\n", None),
    ("fixup! vm: fuse\n", None),
    (LONG + "\n\nBody.\n", "73 characters"),
    ("Fuse x + a*b\n\nBody.\n", "area: imperative summary"),
    ("vm fuse\n\nBody.\n", "area: imperative summary"),
    ("vm: fuse\nBody at once.\n", "second line must be blank"),
    ("vm: fuse\n", "no body"),
    ("vm: fuse\n\n# only a comment\n", "no body"),
])
def test_the_hook(tmp_path, message, error):
    f = tmp_path / "COMMIT_EDITMSG"
    f.write_text(message)
    r = subprocess.run([str(HOOK), str(f)], capture_output=True, text=True)
    if error is None:
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 1 and error in r.stderr, r.stderr
        assert "docs/contributing.md" in r.stderr
