"""Boot the installed Debian kernel in qemu and run a test script inside it.

The host kernel cannot load modules, so kernel tests run in a VM:
``qemu-system-x86_64`` with software emulation (TCG; KVM does not work on
this machine), the kernel from ``/boot`` whose headers built our modules,
and an initramfs made here: busybox-static, the files a test adds (modules,
statically linked programs) and an ``/init`` that runs the test's shell
script, dumps the kernel log and powers off.  Results come back on the
serial console.

Typical use::

    vm = VM()
    vm.add_file(build / "kmod" / "cad.ko", "/cad.ko")
    vm.add_file(build / "bin" / "my_static_test", "/bin/my_static_test")
    r = vm.run('''
        insmod /cad.ko
        my_static_test --rank 0 & my_static_test --rank 1 & wait
        rmmod cad
    ''')
    assert r.exit_code == 0, r.output
    assert not r.kernel_problems(), r.dmesg

The script runs under busybox ``sh -e`` with every busybox applet on PATH;
start several processes with ``&`` and ``wait`` for them.  Test programs
must be statically linked (or bring their libraries along).
"""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUSYBOX = Path("/bin/busybox")

# Lines of the kernel log that mean something went wrong in the kernel.
KERNEL_PROBLEM = re.compile(
    r"WARNING:|BUG:|Oops|general protection fault|Call Trace|kernel panic|"
    r"possible circular locking|possible recursive locking|inconsistent lock state|"
    r"INFO: task .* blocked|stack-protector|UBSAN|KASAN|kmemleak",
)

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "@@CAD-SCRIPT-BEGIN"
sh -e /test.sh
echo "@@CAD-SCRIPT-END $?"
echo "@@CAD-DMESG-BEGIN"
dmesg
echo "@@CAD-DMESG-END"
poweroff -f
"""


def kernel_version() -> str:
    """The newest kernel with both an image and headers installed."""
    out = subprocess.run([str(HERE / "kernel-version.sh")], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


@dataclass
class Result:
    console: str            # everything qemu printed
    output: str             # what the test script printed
    exit_code: int | None   # the script's exit status, None if it never ended
    dmesg: str              # the kernel log after the script
    seconds: float

    def kernel_problems(self) -> list[str]:
        """Lines of the kernel log that report a warning, bug or oops."""
        return [line for line in self.dmesg.splitlines() if KERNEL_PROBLEM.search(line)]


def _newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """A cpio archive in the 'newc' format the kernel unpacks."""
    out = io.BytesIO()
    for ino, (name, mode, data) in enumerate(entries + [("TRAILER!!!", 0, b"")], start=1):
        encoded = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0]
        out.write(b"070701" + b"".join(b"%08X" % f for f in fields))
        out.write(encoded)
        out.write(b"\0" * (-(110 + len(encoded)) % 4))
        out.write(data)
        out.write(b"\0" * (-len(data) % 4))
    return out.getvalue()


class VM:
    """One boot of the kernel with an initramfs built from added files."""

    def __init__(self, version: str | None = None, memory_mb: int = 512, cpus: int = 2):
        self.version = version or kernel_version()
        self.kernel = Path(f"/boot/vmlinuz-{self.version}")
        self.memory_mb = memory_mb
        self.cpus = cpus
        self.files: dict[str, tuple[int, bytes]] = {}
        if not self.kernel.exists():
            raise FileNotFoundError(f"{self.kernel} is missing: run 'make deps'")
        if not BUSYBOX.exists():
            raise FileNotFoundError(f"{BUSYBOX} is missing: run 'make deps' (busybox-static)")

    def add_file(self, src: str | os.PathLike, dest: str, mode: int | None = None) -> None:
        """Put a host file into the initramfs at dest (executable bit kept)."""
        src = Path(src)
        perm = mode if mode is not None else (0o755 if os.access(src, os.X_OK) else 0o644)
        self.files[dest] = (perm, src.read_bytes())

    def add_text(self, dest: str, text: str, mode: int = 0o644) -> None:
        self.files[dest] = (mode, text.encode())

    def _initramfs(self, script: str) -> bytes:
        files = dict(self.files)
        files["/init"] = (0o755, INIT.encode())
        files["/test.sh"] = (0o755, script.encode())
        files["/bin/busybox"] = (0o755, BUSYBOX.read_bytes())
        dirs = {"/bin", "/proc", "/sys", "/dev", "/tmp"}
        for dest in files:
            parent = Path(dest).parent
            while str(parent) != "/":
                dirs.add(str(parent))
                parent = parent.parent
        entries = [(d.lstrip("/"), stat.S_IFDIR | 0o755, b"") for d in sorted(dirs)]
        entries += [(dest.lstrip("/"), stat.S_IFREG | mode, data)
                    for dest, (mode, data) in sorted(files.items())]
        return gzip.compress(_newc(entries), compresslevel=1)

    def run(self, script: str, timeout: float = 600) -> Result:
        """Boot, run script, power off; the result whatever happened."""
        qemu = shutil.which("qemu-system-x86_64")
        if not qemu:
            raise FileNotFoundError("qemu-system-x86_64 is missing: run 'make deps'")
        with tempfile.TemporaryDirectory(prefix="cad-vm-") as tmp:
            initrd = Path(tmp) / "initramfs.gz"
            initrd.write_bytes(self._initramfs(script))
            cmd = [
                qemu, "-accel", "tcg", "-m", str(self.memory_mb), "-smp", str(self.cpus),
                "-kernel", str(self.kernel), "-initrd", str(initrd),
                "-append", "console=ttyS0 quiet panic=-1",
                "-display", "none", "-serial", "stdio", "-monitor", "none", "-no-reboot",
            ]
            start = time.monotonic()
            try:
                proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True,
                                      timeout=timeout)
                console = proc.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as e:
                console = (e.stdout or b"").decode(errors="replace")
                console += f"\n@@CAD-HARNESS: timed out after {timeout} s\n"
            seconds = time.monotonic() - start
        return _parse(console, seconds)


def _between(text: str, begin: str, end: str) -> str | None:
    i = text.find(begin)
    if i < 0:
        return None
    i = text.find("\n", i) + 1
    j = text.find(end, i)
    return text[i:j] if j >= 0 else text[i:]


def _parse(console: str, seconds: float) -> Result:
    console = console.replace("\r\n", "\n")
    output = _between(console, "@@CAD-SCRIPT-BEGIN", "@@CAD-SCRIPT-END") or ""
    m = re.search(r"@@CAD-SCRIPT-END (\d+)", console)
    dmesg = _between(console, "@@CAD-DMESG-BEGIN", "@@CAD-DMESG-END") or ""
    return Result(console=console, output=output, exit_code=int(m.group(1)) if m else None,
                  dmesg=dmesg, seconds=seconds)
