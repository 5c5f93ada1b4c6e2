"""kmod/cad follows the kernel's coding style: the kernel's own
checkpatch.pl --strict (Linux 6.1, the kernel the module is built for)
reports nothing on its sources but the few false positives listed below.

checkpatch.pl is $CAD_CHECKPATCH, else build/checkpatch/checkpatch.pl,
which the build extracts from Debian's linux-source-6.1 (kmod/CMakeLists.txt,
make deps installs the package)."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (file, start of checkpatch's message): items that fixing would make
# worse, each reported exactly once (a second one is a new item, and one
# no longer reported must leave this list with its reason).
FALSE_POSITIVES = {
    # __stringify'd into the parameter's description: BIT(20) would put
    # the macro's expansion into modinfo.
    ("kmod/cad/cad_main.c", "CHECK: Prefer using the BIT macro"),
    # The sanitizer's report of a misaligned access needs the address
    # itself; %p prints a hash of it.
    ("kmod/cad/cad_ubsan.c", "WARNING: Using vsprintf specifier '%px'"),
    # __builtin_unreachable() reached: the handler cannot return (the
    # kernel's lib/ubsan.c panics there).
    ("kmod/cad/cad_ubsan.c", "CHECK: Do not crash the kernel"),
}


def checkpatch(build_dir):
    env = os.environ.get("CAD_CHECKPATCH")
    path = Path(env) if env else build_dir / "checkpatch" / "checkpatch.pl"
    return path if path.is_file() else None


def test_kmod_cad_passes_checkpatch(build_dir):
    script = checkpatch(build_dir)
    if script is None:
        pytest.skip("checkpatch.pl not found: set CAD_CHECKPATCH, or install linux-source-6.1 (make deps) and "
                    "build (it is extracted to build/checkpatch/)")
    if not shutil.which("perl"):
        pytest.skip("perl is not installed")
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kmod" / "cad").iterdir() if p.suffix in (".c", ".h"))
    assert len(files) > 5
    r = subprocess.run(["perl", str(script), "--no-tree", "--strict", "--terse", "--no-summary", "-f", *files],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert "ERROR: " not in r.stderr, r.stderr
    found = []
    unexpected = []
    for line in r.stdout.splitlines():
        m = re.match(r"(\S+?):\d+: (.*)", line)
        if not m:
            unexpected.append(line)
            continue
        known = next((fp for fp in FALSE_POSITIVES if fp[0] == m.group(1) and m.group(2).startswith(fp[1])), None)
        if known and known not in found:
            found.append(known)
        else:
            unexpected.append(line)
    assert not unexpected, "checkpatch.pl --strict on kmod/cad:\n" + "\n".join(unexpected)
    assert set(found) == FALSE_POSITIVES, f"no longer reported: {FALSE_POSITIVES - set(found)}"
