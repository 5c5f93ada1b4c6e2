"""User-defined operators (issue 6): the C front end (cadc op, Clang
LibTooling), the interpreter against native code, and the rejections.

Differential: every operator of algorithms/ops/ and a set of generated ones
is compiled twice -- by cadc into VM bytecode and by gcc into native code --
and both run over the same random elements, biased to special values (NaN,
+-inf, +-0, denormals, INT_MIN, -1, wrap-around edges).  The results must be
identical field by field (floating-point fields: both NaN counts as equal,
the payload being the hardware's).  The kernel half of the comparison is
test_kernel_ops.py."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from gen_ops import generate

ROOT = Path(__file__).resolve().parents[2]
OPS = ROOT / "algorithms" / "ops"
N = 3000
NATIVE_FLAGS = ["-O2", "-fwrapv", "-ffp-contract=off", "-fno-strict-aliasing"]

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "%(src)s"
int main(int argc, char **argv)
{
	FILE *f;
	long n;
	unsigned char *in, *io;
	size_t i, count;
	int self = argc == 5;   /* a 4th argument: in == inout (IN is not used) */
	if (argc != 4 && argc != 5) return 2;
	f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); n = ftell(f); rewind(f);
	in = malloc(n + 1); io = malloc(n + 1);
	if (fread(in, 1, n, f) != (size_t)n) return 2;
	fclose(f);
	f = fopen(argv[2], "rb");
	if (fread(io, 1, n, f) != (size_t)n) return 2;
	fclose(f);
	count = (size_t)n / %(esz)d;
	for (i = 0; i < count; i++)
		%(name)s((const void *)((self ? io : in) + i * %(esz)d), (void *)(io + i * %(esz)d));
	f = fopen(argv[3], "wb");
	fwrite(io, 1, n, f);
	fclose(f);
	return 0;
}
"""


def cadc(build_dir, *args, check=True):
    r = subprocess.run([str(build_dir / "bin" / "cadc"), *map(str, args)], capture_output=True, text=True)
    if check:
        assert r.returncode == 0, r.stderr + r.stdout
    return r


def op_tool(build_dir, *args):
    r = subprocess.run([str(build_dir / "bin" / "op_tool"), *map(str, args)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


def differs(a: bytes, b: bytes, esz: int, fields) -> str | None:
    import struct
    for i in range(len(a) // esz):
        for off, kind in fields:
            w = {"f64": 8, "i64": 8, "u64": 8, "f32": 4, "i32": 4, "u32": 4, "i16": 2, "u16": 2}.get(kind, 1)
            x, y = a[i * esz + off: i * esz + off + w], b[i * esz + off: i * esz + off + w]
            if x == y:
                continue
            if kind in ("f64", "f32"):
                fmt = "<d" if kind == "f64" else "<f"
                vx, vy = struct.unpack(fmt, x)[0], struct.unpack(fmt, y)[0]
                if vx != vx and vy != vy:
                    continue
            return f"element {i}, field at {off} ({kind}): vm {x.hex()} native {y.hex()}"
    return None


def native(tmp: Path, src: Path, op, extra_flags=(), compiler=None) -> Path:
    """op of src compiled by gcc (or compiler: the command and its flags)
    into a program: DRIVER IN INOUT OUT [same] writes inout = in op inout
    for every element (with `same`, in is inout)."""
    name, esz = op["name"], op["elem_size"]
    drv = tmp / f"{name}_driver.c"
    drv.write_text(DRIVER % {"src": src, "esz": esz, "name": name})
    exe = tmp / f"{name}_native"
    cc = compiler or ["gcc", *NATIVE_FLAGS]
    subprocess.run([*cc, *extra_flags, "-I", str(OPS), str(drv), "-o", str(exe), "-lm"], check=True)
    return exe


class Builds:
    """What cadc and gcc make of operator sources, each made once: the
    suites that run the same operators over other data (test_ops.py on
    the host, test_kernel_ops.py in cad.ko) share one (the op_builds
    fixture, tests/ops/conftest.py).  Keyed by the source's text, so a
    generated operator written to two folders is built once."""

    def __init__(self, build_dir, root: Path):
        self.build_dir, self.root = build_dir, root
        self._made: dict[tuple, Path] = {}
        self._folders = 0

    def _folder(self) -> Path:
        """A new folder (one per build: a build that failed left its own)."""
        self._folders += 1
        d = self.root / str(self._folders)
        d.mkdir()
        return d

    def cadop(self, src: Path) -> Path:
        """`cadc op compile src`'s .cadop."""
        key = ("cadop", src.read_text())
        if key not in self._made:
            cadop = self._folder() / (src.stem + ".cadop")
            cadc(self.build_dir, "op", "compile", src, "-o", cadop, "-I", OPS)
            self._made[key] = cadop
        return self._made[key]

    def native(self, src: Path, op) -> Path:
        """native()'s program for op of src (gcc, NATIVE_FLAGS)."""
        key = ("native", src.read_text(), op["name"], op["elem_size"])
        if key not in self._made:
            self._made[key] = native(self._folder(), src, op)
        return self._made[key]


def prepare(build_dir, tmp: Path, src: Path, seed: int, n: int = N, builds: Builds | None = None):
    """Compiles src both ways (or takes what builds has made of it), runs
    both on the same n elements; returns the operators with their files."""
    builds = builds or Builds(build_dir, tmp)
    cadop = builds.cadop(src)
    ops = json.loads(cadop.read_text())["ops"]
    out = []
    for op in ops:
        name = op["name"]
        exe = builds.native(src, op)
        files = {k: tmp / f"{name}.{k}" for k in ("in", "inout", "native", "vm")}
        op_tool(build_dir, "gen", cadop, name, n, seed, files["in"], files["inout"])
        subprocess.run([str(exe), files["in"], files["inout"], files["native"]], check=True)
        op_tool(build_dir, "vm", cadop, name, files["in"], files["inout"], files["vm"])
        out.append((op, cadop, files))
    return out


def standard_ops():
    return sorted(p for p in OPS.glob("*.c"))


@pytest.mark.parametrize("src", standard_ops(), ids=lambda p: p.stem)
def test_standard_op_matches_native(build_dir, op_builds, tmp_path, src):
    for op, _, files in prepare(build_dir, tmp_path, src, seed=1, builds=op_builds):
        fields = [tuple(f) for f in op["fields"]]
        problem = differs(files["vm"].read_bytes(), files["native"].read_bytes(), op["elem_size"], fields)
        assert problem is None, f"{op['name']}: {problem}"


GENERATED = generate(seed=6, count=40)


@pytest.mark.parametrize("name,text", GENERATED, ids=[n for n, _ in GENERATED])
def test_generated_op_matches_native(build_dir, op_builds, tmp_path, name, text):
    src = tmp_path / name
    src.write_text(text)
    for op, _, files in prepare(build_dir, tmp_path, src, seed=int(name[3:-2]) + 100, builds=op_builds):
        fields = [tuple(f) for f in op["fields"]]
        problem = differs(files["vm"].read_bytes(), files["native"].read_bytes(), op["elem_size"], fields)
        assert problem is None, f"{op['name']}: {problem}\n{text}"


def test_spill_fill_by_hand(build_dir, tmp_path):
    """A hand-written operator with SPILL and FILL (spill_fill.py): the
    .cadop loader takes the opcodes and the VM gives the reference."""
    import spill_fill as sf
    ins, ios = sf.inputs(N, seed=11)
    (tmp_path / "in").write_bytes(ins)
    (tmp_path / "io").write_bytes(ios)
    op_tool(build_dir, "vm", sf.CADOP, sf.NAME, tmp_path / "in", tmp_path / "io", tmp_path / "out")
    assert (tmp_path / "out").read_bytes() == sf.expected(ins, ios)
