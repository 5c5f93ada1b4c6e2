"""Boot the installed Debian kernel in qemu and run a test script inside it.

The host kernel cannot load modules, so kernel tests run in a VM:
``qemu-system-x86_64`` with software emulation (TCG; KVM does not work on
this machine), the kernel from ``/boot`` whose headers built our modules,
and an initramfs made here: busybox-static, the files a test adds (modules,
programs and their shared libraries) and an ``/init`` that runs the test's shell
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
start several processes with ``&`` and ``wait`` for them.

Dynamically linked programs come with their shared libraries::

    vm.add_program(build / "bin" / "cadrun")      # /bin/cadrun + what ldd lists
    vm.add_program(build / "bin" / "rt_check")    # + build/lib/libcadrt.so (RUNPATH)
                                                  #   and cad-std.cadlib beside it
    vm.add_library("/usr/lib/x86_64-linux-gnu/libfoo.so.1")   # for dlopen

Every library goes to the absolute path it has on the host (the ELF
interpreter /lib64/ld-linux-x86-64.so.2 too, RUNPATH libraries such as
/work/main/build/lib/libcadrt.so too), so the loader inside the VM resolves
exactly as ``ldd`` did on the host.  Symlinks are followed (the initramfs
holds the real contents), a library shared by several programs is stored
once, and debug sections are stripped (``strip_debug=False`` keeps them).

The kernel is the installed Debian one unless ``CAD_TEST_KERNEL`` names
another image, with ``CAD_TEST_KDIR`` the built tree it came from
(``make test-kmod-sanitised``: the sanitised kernel of
tests/kmod/sanitised/build-kernel.sh).  The modules are then built against
that tree (``built_module()``), and every timeout, the VM's and the ones the
tests pass to programs inside it (``scaled()``), is multiplied by
``TIMEOUT_FACTOR``.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import stat
import subprocess
import struct
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
BUSYBOX = Path("/bin/busybox")

# Another kernel than the installed one (an image and the built tree its
# modules are built against; both or neither), and how much slower it is.
TEST_KERNEL = os.environ.get("CAD_TEST_KERNEL") or None
TEST_KDIR = os.environ.get("CAD_TEST_KDIR") or None
if bool(TEST_KERNEL) != bool(TEST_KDIR):
    raise RuntimeError("CAD_TEST_KERNEL and CAD_TEST_KDIR go together (make test-kmod-sanitised)")
# The sanitised kernel (KASAN, lockdep, ...) runs the tests about four
# times slower than Debian's under TCG; CAD_TEST_TIMEOUT_FACTOR overrides.
TIMEOUT_FACTOR = float(os.environ.get("CAD_TEST_TIMEOUT_FACTOR") or (6 if TEST_KERNEL else 1))


def scaled(seconds: float) -> int:
    """A timeout of the tests (the VM's or a program's inside it) for the
    kernel they run under: seconds times TIMEOUT_FACTOR."""
    return int(seconds * TIMEOUT_FACTOR)

# Files a shared library finds beside itself at run time (not through the
# loader): added with the library.  libcadrt.so reads its standard library
# from the directory it was loaded from (cadrt/src/runtime.cpp,
# default_library(); CADRT_LIBRARY overrides it).
COMPANIONS = {
    "libcadrt.so": ("cad-std.cadlib",),
}

# ldd output: "libfoo.so.1 => /path/libfoo.so.1 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)",
# "linux-vdso.so.1 (0x...)" (no file: skipped); "libbar.so => not found" is an error.
_LDD_LINE = re.compile(r"^\s*(?:(\S+) => )?(\S+)(?: \(0x[0-9a-f]+\))?\s*$")

# Lines of the kernel log that mean something went wrong in the kernel.
# The sanitised kernel's reports (make test-kmod-sanitised) begin with
# "BUG: KASAN: use-after-free in ...", "BUG: KFENCE: out-of-bounds
# read in ...", "BUG: sleeping function called from invalid context at
# ...", "WARNING: possible circular locking dependency detected",
# "WARNING: inconsistent lock state", "BUG: Invalid wait context",
# "WARNING: suspicious RCU usage", "ODEBUG: free active ... object type:
# work_struct", "list_add corruption. ...", "kernel BUG at ...": each is
# matched below on its own, not only through the WARNING or Call Trace
# that may follow it.
KERNEL_PROBLEM = re.compile(
    r"WARNING:|BUG:|kernel BUG at|Oops|general protection fault|Call Trace|kernel panic|"
    r"possible circular locking|possible recursive locking|inconsistent lock state|"
    r"possible irq lock inversion|lock held when returning to user space|"
    r"sleeping function called from invalid context|scheduling while atomic|Invalid wait context|"
    r"suspicious RCU usage|DEBUG_LOCKS_WARN_ON|ODEBUG:|list_(?:add|del) corruption|"
    r"INFO: task .* blocked|stack-protector|UBSAN|KASAN|KFENCE|kmemleak|"
    # SLUB's debugging (KERNEL_DEBUG): "BUG kmalloc-32 (...): Right Redzone
    # overwritten", "Poison overwritten", "Object padding overwritten";
    # page poisoning: "pagealloc: memory corruption".
    r"BUG [\w-]+ \(|Redzone overwritten|Poison overwritten|padding overwritten|memory corruption",
)

# The kernel's own checks the test VMs boot with (Debian's kernel has no
# KASAN, KFENCE or lockdep, the sanitised kernel has them; both have SLUB's
# debugging and page poisoning):
# every slab object with red zones on both sides checked at free (F, Z: a
# write past an allocation of the module is reported), freed objects
# poisoned and checked when reused (P: a use after free), who allocated
# and freed each (U, in the report); freed pages poisoned and checked
# when allocated again (page_poison: a write to a page after the module
# unpinned it and the process let it go).  An array of cad.ko allocated
# one element short on purpose (a write past a 32-byte object) is
# reported in the cycles case; with "slub_debug=P" alone it went unseen.
# The benchmarks boot without them.
KERNEL_DEBUG = "slub_debug=FZPU page_poison=1"

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm
mount -t tmpfs -o mode=1777 shm /dev/shm
echo "@@CAD-SCRIPT-BEGIN"
sh -e /test.sh
echo "@@CAD-SCRIPT-END $?"
echo "@@CAD-DMESG-BEGIN"
dmesg
echo "@@CAD-DMESG-END"
poweroff -f
"""


def kernel_version() -> str:
    """The newest kernel with both an image and headers installed, or
    CAD_TEST_KDIR's release."""
    if TEST_KDIR:
        return (Path(TEST_KDIR) / "include" / "config" / "kernel.release").read_text().strip()
    out = subprocess.run([str(HERE / "kernel-version.sh")], check=True,
                         capture_output=True, text=True)
    return out.stdout.strip()


# The modules of kmod/CMakeLists.txt, by their path in the build
# directory: (the tree kmod/kbuild.sh builds them in, its module
# directories, make variables).  Under CAD_TEST_KDIR, built_module() builds
# them against that tree, into BUILD/kmod-<release>/.
MODULES = {
    "kmod/cad.ko": ("cad", "kmod/cad:tests/kmod/coretest", ()),
    "kmod/cad_coretest.ko": ("cad", "kmod/cad:tests/kmod/coretest", ()),
    "kmod/ubsan/cad.ko": ("ubsan/cad", "kmod/cad", ("CAD_UBSAN=y",)),
    # Only for the sanitised kernel (test_sanitised.py).
    "kmod/cad_sancheck.ko": ("sancheck", "tests/kmod/sancheck", ()),
}
_built: set[tuple[str, str]] = set()


def built_module(build_dir: str | os.PathLike, path: str = "kmod/cad.ko") -> Path:
    """A kernel module of the build (path: kmod/cad.ko, kmod/ubsan/cad.ko,
    kmod/cad_coretest.ko) for the kernel the tests boot: build_dir/path,
    or under CAD_TEST_KDIR the same module built against that tree
    (kbuild.sh, incremental; once per process)."""
    build_dir = Path(build_dir)
    if not TEST_KDIR:
        found = build_dir / path
        if not found.exists():
            raise FileNotFoundError(f"{found} is not built: run 'make build'")
        return found
    tree, moddirs, variables = MODULES[path]
    top = build_dir.resolve() / f"kmod-{kernel_version()}"   # make -C KDIR M= needs it absolute
    if (str(top), tree) not in _built:
        subprocess.run([str(ROOT / "kmod" / "kbuild.sh"), str(ROOT), str(top / tree), TEST_KDIR, moddirs,
                        *variables], check=True)
        _built.add((str(top), tree))
    return top / Path(path).relative_to("kmod")


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

    def __init__(self, version: str | None = None, memory_mb: int = 512, cpus: int = 2, append: str = ""):
        """append: more of the kernel's command line (slub_debug=P, ...)."""
        self.version = version or kernel_version()
        # Under the sanitised kernel, every KASAN report, not only the first.
        self.append = f"{append} kasan_multi_shot".strip() if TEST_KERNEL and not version else append
        self.kernel = Path(TEST_KERNEL) if TEST_KERNEL and not version else Path(f"/boot/vmlinuz-{self.version}")
        self.memory_mb = memory_mb
        self.cpus = cpus
        self.files: dict[str, tuple[int, bytes]] = {}
        self.links: dict[str, str] = {}       # symlinks: dest -> target
        self._stored: dict[str, str] = {}     # host file (real path) -> where it is in the VM
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

    def add_program(self, src: str | os.PathLike, dest_dir: str = "/bin",
                    strip_debug: bool = True) -> str:
        """Put an ELF program into dest_dir with every shared library it needs.

        The libraries are the ones ``ldd`` finds on the host (run without
        LD_LIBRARY_PATH and LD_PRELOAD, which the VM does not have), the ELF
        interpreter included; each goes to the same absolute path as on the
        host, plus the COMPANIONS of each.  A statically linked program is
        added alone.  Returns the program's path in the VM."""
        src = Path(src)
        if not src.is_file():
            raise FileNotFoundError(src)
        dest = f"{dest_dir.rstrip('/')}/{src.name}"
        self._store(src, dest, strip_debug)
        for lib in _needed(src):
            self._add_shared(lib, strip_debug)
        return dest

    def add_library(self, path: str | os.PathLike, dest: str | None = None,
                    strip_debug: bool = True) -> str:
        """Put a file the program opens at run time into the initramfs: a
        shared object loaded with dlopen (with the libraries it needs, as
        for add_program) or a data file it finds beside itself.  dest is
        the host path (made absolute, symlinks not resolved) unless given.
        Returns its path in the VM."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(path)
        dest = dest or os.path.abspath(path)
        if _is_elf(path):
            self._store(path, dest, strip_debug)
            self._add_companions(path, dest)
            for lib in _needed(path):
                self._add_shared(lib, strip_debug)
        else:
            self._store(path, dest, False)
        return dest

    def _add_shared(self, lib: str, strip_debug: bool) -> None:
        self._store(Path(lib), lib, strip_debug)
        self._add_companions(Path(lib), lib)

    def _add_companions(self, lib: Path, dest: str) -> None:
        for name in COMPANIONS.get(lib.name.split(".so")[0] + ".so", ()):  # libcadrt.so.0 too
            extra = lib.parent / name
            if extra.is_file():
                self._store(extra, f"{os.path.dirname(dest)}/{name}", False)

    def _store(self, src: Path, dest: str, strip_debug: bool) -> None:
        """src's contents (symlinks followed) at dest; a host file stored
        already, at another place, becomes a symlink to it there."""
        real = os.path.realpath(src)
        first = self._stored.get(real)
        if first == dest or dest in self.links:
            return
        if first is not None:
            self.links[dest] = first
            return
        perm = 0o755 if os.access(real, os.X_OK) else 0o644
        data = _without_debug(real) if strip_debug and _is_elf(Path(real)) else None
        self.files[dest] = (perm, data if data is not None else Path(real).read_bytes())
        self._stored[real] = dest

    def _initramfs(self, script: str) -> bytes:
        files = dict(self.files)
        files["/init"] = (0o755, INIT.encode())
        # What runs in the VM knows how slow its kernel is (kcad_check's
        # time limits).
        if TIMEOUT_FACTOR != 1:
            script = f"export CAD_TEST_TIMEOUT_FACTOR={TIMEOUT_FACTOR:g}\n{script}"
        files["/test.sh"] = (0o755, script.encode())
        files["/bin/busybox"] = (0o755, BUSYBOX.read_bytes())
        dirs = {"/bin", "/proc", "/sys", "/dev", "/tmp"}
        for dest in [*files, *self.links]:
            parent = Path(dest).parent
            while str(parent) != "/":
                dirs.add(str(parent))
                parent = parent.parent
        entries = [(d.lstrip("/"), stat.S_IFDIR | 0o755, b"") for d in sorted(dirs)]
        entries += [(dest.lstrip("/"), stat.S_IFREG | mode, data)
                    for dest, (mode, data) in sorted(files.items())]
        entries += [(dest.lstrip("/"), stat.S_IFLNK | 0o777, target.encode())
                    for dest, target in sorted(self.links.items()) if dest not in files]
        return gzip.compress(_newc(entries), compresslevel=1)

    def run(self, script: str, timeout: float = 600) -> Result:
        """Boot, run script, power off; the result whatever happened.
        timeout: in seconds under the installed kernel (scaled())."""
        timeout = scaled(timeout)
        qemu = shutil.which("qemu-system-x86_64")
        if not qemu:
            raise FileNotFoundError("qemu-system-x86_64 is missing: run 'make deps'")
        with tempfile.TemporaryDirectory(prefix="cad-vm-") as tmp:
            initrd = Path(tmp) / "initramfs.gz"
            initrd.write_bytes(self._initramfs(script))
            cmd = [
                qemu, "-accel", "tcg", "-m", str(self.memory_mb), "-smp", str(self.cpus),
                "-kernel", str(self.kernel), "-initrd", str(initrd),
                "-append", f"console=ttyS0 quiet panic=-1 {self.append}".rstrip(),
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


def _is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def _interpreter(path: Path) -> str | None:
    """The ELF interpreter (PT_INTERP) of a 64-bit little-endian ELF file."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 3:  # PT_INTERP
            return data[p_offset:p_offset + p_filesz].rstrip(b"\0").decode()
    return None


def _needed(path: Path) -> list[str]:
    """Absolute paths of the shared libraries path needs, the interpreter
    included, as the loader finds them on the host; [] if statically linked."""
    interp = _interpreter(path)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, env=env)
    if out.returncode != 0 or "not a dynamic executable" in out.stdout + out.stderr:
        if interp is None:
            return []
        raise RuntimeError(f"ldd {path} failed: {out.stdout}{out.stderr}")
    libs = [interp] if interp else []
    missing = []
    for line in out.stdout.splitlines():
        if line.strip().endswith("=> not found"):
            missing.append(line.split()[0])
            continue
        m = _LDD_LINE.match(line)
        if m and m.group(2).startswith("/") and m.group(2) not in libs:
            libs.append(m.group(2))
    if missing:
        raise FileNotFoundError(f"{path} needs libraries ldd cannot find: {', '.join(missing)}")
    return libs


def _without_debug(path: str) -> bytes | None:
    """path's contents without debug sections (objcopy), None if that fails."""
    objcopy = shutil.which("objcopy")
    if not objcopy:
        return None
    with tempfile.TemporaryDirectory(prefix="cad-vm-strip-") as tmp:
        out = Path(tmp) / "stripped"
        r = subprocess.run([objcopy, "--strip-debug", path, str(out)], capture_output=True)
        return out.read_bytes() if r.returncode == 0 else None


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


@dataclass
class Case:
    command: str
    status: int | None      # None: it never ended (the VM crashed or timed out)
    output: str             # its stdout and stderr
    seconds: float          # by the VM's clock


@dataclass
class CaseRun:
    result: Result
    cases: dict[str, Case]

    def __getattr__(self, name):  # exit_code, output, dmesg, ... of the boot
        return getattr(self.result, name)


def cad_vm(build_dir: str | os.PathLike, module: str = "kmod/cad.ko", **kwargs) -> VM:
    """A VM with build_dir's cad.ko (module: the path in build_dir;
    kmod/ubsan/cad.ko is the sanitized build) at /cad.ko (the script
    insmods it)."""
    vm = VM(**kwargs)
    vm.add_file(built_module(build_dir, module), "/cad.ko")
    return vm


# After cad.ko's tests: its counters (pinned pages, live objects), then
# rmmod; "@@UNLOADED 0" if it went.
COUNT_AND_UNLOAD = """
echo "@@COUNTERS $(cat /sys/module/cad/parameters/pinned_pages) $(cat /sys/module/cad/parameters/live_objects)"
rmmod cad
echo "@@UNLOADED $(grep -c '^cad ' /proc/modules)"
"""


# The settings of cad.ko the qemu suites run under: name -> (defer,
# split_min or None for the default).  "split" is 2 with every unhinted
# transfer from 128 bytes that neither side's call matched copied half on
# each side's CPU.
DEFER_MODES = {"0": (0, None), "1": (1, None), "2": (2, None), "split": (2, 128)}


def with_defer(mode: int, cmd: str, split_min: int | None = None) -> str:
    """cmd with cad.ko's defer parameter set to mode (and defer_min to 0, so
    that every transfer goes that way; split_min too if given), all
    restored after; prints "@@DEFERRED n" and "@@SPLIT n", the transfers the
    module deferred and split meanwhile."""
    par = "/sys/module/cad/parameters"
    split = f"echo {split_min} > {par}/split_min && " if split_min is not None else ""
    return (f"d0=$(cat {par}/deferred); s0=$(cat {par}/split); m0=$(cat {par}/defer); "
            f"n0=$(cat {par}/defer_min); k0=$(cat {par}/split_min); "
            f"echo {mode} > {par}/defer && echo 0 > {par}/defer_min && {split}{{ {cmd}; }}; "
            f"s=$?; echo $m0 > {par}/defer; echo $n0 > {par}/defer_min; echo $k0 > {par}/split_min; "
            f'echo "@@DEFERRED $(( $(cat {par}/deferred) - d0 ))"; '
            f'echo "@@SPLIT $(( $(cat {par}/split) - s0 ))"; exit $s')


def run_cases(vm: VM, cases: dict[str, str], before: str = "", after: str = "",
              timeout: float = 600) -> CaseRun:
    """Runs many shell commands in one boot, each with its status, output and
    duration: `before`, then every case in order, then `after`."""
    lines = [before]
    for name, cmd in cases.items():
        lines += [f'echo "@@CASE {name} $(cut -d" " -f1 /proc/uptime)"',
                  f"( {cmd} ) > /tmp/case.out 2>&1 && s=0 || s=$?",
                  "cat /tmp/case.out",
                  f'echo "@@ENDCASE {name} $s $(cut -d" " -f1 /proc/uptime)"']
    lines.append(after)
    r = vm.run("\n".join(lines), timeout=timeout)
    found = {}
    for m in re.finditer(r"@@CASE (\S+) (\S+)\n(.*?)@@ENDCASE \1 (\d+) (\S+)\n", r.output, re.S):
        name, start, out, status, end = m.groups()
        found[name] = Case(cases.get(name, ""), int(status), out, float(end) - float(start))
    for name, cmd in cases.items():
        if name not in found:
            tail = r.output[r.output.find(f"@@CASE {name} "):][:4000] if f"@@CASE {name} " in r.output else ""
            found[name] = Case(cmd, None, f"the case did not end in the VM:\n{tail}\n{r.console[-3000:]}", 0.0)
    return CaseRun(r, found)
