"""The operator corpus (tests/ops/corpus/*.c): operators written by hand as
users write them -- helpers (static or not, nested, taking and returning
scalars and structs), a file's own fmax/sqrt/fabs shadowing the library's,
special values, structs, constant-bound loops, early returns, ?: chains,
<math.h> constants, conversions at the edges, float math -- each compiled
by `cadc op compile` and by gcc, run over the same elements and compared
bit for bit, field by field: NaN payload and sign included (padding is not
compared: gcc may copy a local's uninitialised padding with a struct).
Both with in and inout distinct and with in == inout (one buffer, as a
reduction of a range into itself).  The kernel half (one qemu boot for the
whole corpus) is test_kernel_ops.py::test_corpus_in_the_kernel.

The inputs: for every field, first all pairs (in, inout) of a table of
special values of its kind -- quiet and signalling NaNs with payloads and
either sign, +-0, subnormals, +-inf, the extremes, INT_MIN and -1, shift
widths, the edges of the float/int conversions -- then random elements,
half special, half random bits; deterministic (SEED).

gcc's native build: -O2 -ffp-contract=off -fno-strict-aliasing -fwrapv.
The VM wraps signed integers, and the operators add random integers, so
-fwrapv makes the C defined where they overflow; an operator must not rely
on signed overflow otherwise (the corpus never does where it matters: its
guarded divisions form -INT_MIN in unsigned).  The files that define a
library function of their own (`fabs`, `sqrt` with external linkage) are
also built with -fno-builtin (NATIVE_EXTRA): gcc otherwise takes the name
for the builtin and replaces the user's body by `andpd`/`sqrtsd` (checked
with gcc 12 -O2 -S: shadow_sqrt_fabs.c's my_norm became andpd + sqrtsd);
static ones are used as written even without it.

Which NaN gcc's code returns (gcc 12.2, x86-64 SSE2, found with -S and by
running the code): an SSE instruction with two NaN operands returns the
first source operand's, i.e. the destination register's (Intel SDM vol. 1,
4.8.3.5), quieted; with one NaN that one, quieted.  For `-` and `/` gcc
always has the C left operand in the destination (subsd/divsd are not
commutative), so the C rule "first operand's NaN" holds.  For `+` and `*`
it does NOT: the RTL patterns of addsd/mulsd (and addpd/mulpd) are
commutative (`%` constraint), GIMPLE orders the operands of commutative
codes by SSA version (tree_swap_operands_p) and the SLP vectoriser swaps
lanes' operands, so which operand lands in the destination is the register
allocator's choice: `*inout = *in + *inout` is `movsd (%rsi),%xmm0; addsd
(%rdi),%xmm0` at -O2 (inout's NaN) and at -O0 too; `*inout + *in` is
inout's NaN at -O2 but in's at -O0; `b + (a - b)` at -O2 returns (a - b)'s
NaN.  So gcc's code is no reference for the NaN of a `+` or `*` whose two
operands are NaN.  The VM's rule is the C source order: the first operand's
NaN, quieted.  clang -O0 follows it (it loads the left operand into the
destination and folds nothing; it agrees with the rule's model on
nan_arith_f32/f64), so for the operators where gcc -O2 and clang -O0 give
different NaNs (GCC_COMMUTES, found by running both over the inputs) a NaN
result is expected as clang -O0 computes it, every other value as gcc
does -- still bit for bit.  (clang -O0 is no reference for fmin/fmax, whose
reference is glibc's: it inlines them as llvm.minnum, which returns the
other operand for a signalling NaN; no GCC_COMMUTES operator passes a
signalling NaN to them.)  nan_arith_f64 (whose `+` gcc's SLP vectoriser
turns into `addpd` with the operands swapped) and nan_arith_f32 check the
rule itself: every NaN result must be the model's (two_nan_model).  gcc
also folds `x * -1.0` into `-x`, which flips a NaN's sign where the
multiplication keeps it (signed_zero.c multiplies by -2.0 instead).

CAD_OP_PENDING=1 turns the cases that need the front end's or the VM's
work in progress (NEEDS) into expected failures; by default they run, and
fail until that work lands."""

import json
import os
import random
import struct
import subprocess
from pathlib import Path

import pytest

from test_ops import OPS, cadc, native, op_tool

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "ops" / "corpus"
SEED = 20261207
N_RANDOM = 600

# Files that need gcc flags beyond test_ops.NATIVE_FLAGS.
# gcc takes fmin/fmax (and their f forms) for commutative builtins and may
# swap their arguments in the call to libm, so that two NaNs give the
# other one: the reference for operators that pass NaNs to them is glibc
# called in source order (-fno-builtin), which is the VM's semantics.
NATIVE_EXTRA = {"shadow_sqrt_fabs": ["-fno-builtin"], "nan_fminmax": ["-fno-builtin"], "f32_math": ["-fno-builtin"]}

# name -> (the work it waits for, why it fails against today's compiler).
NEEDS: dict[str, tuple[str, str]] = {}

# In cad.ko only (its VM is built by the kernel's gcc, which may pick other
# operands of a two-NaN + or * than the user-space build).
NEEDS_KERNEL: dict[str, tuple[str, str]] = {}

# The operators whose NaN results are checked against the rule itself
# (first operand's NaN, quieted) rather than gcc's code: name -> which
# buffer holds every field's first operand (0 in, 1 inout).
FIRST_OPERAND = {"nan_arith_f64": 0, "nan_arith_f32": 1}

# Operators where gcc -O2 returns another NaN than the C source order for a
# `+` or `*` of two NaNs (see the docstring): their NaN results are
# expected as clang -O0 computes them.
GCC_COMMUTES = {"affine_compose", "double_double", "helper_struct_value", "arrays_in_struct", "complex_f32", "f32_math", "kahan", "nested_loops", "shadow_sqrt_fabs",
                "signed_zero", "subnormals"}
ORDER_FLAGS = ["-O0", "-fwrapv", "-ffp-contract=off", "-fno-strict-aliasing"]

WIDTH = {"f64": 8, "i64": 8, "u64": 8, "f32": 4, "i32": 4, "u32": 4, "i16": 2, "u16": 2, "i8": 1, "u8": 1, "bool": 1}


def _f64(x: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def _f32(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


SPECIAL_F64 = [
    0x7ff8000000000000, 0xfff8000000000000,   # the default quiet NaN, both signs
    0x7ff8000000000001, 0xfff80000000abcde,   # quiet NaNs with payloads
    0x7ff0000000000001, 0xfff4000000000005,   # signalling NaNs with payloads
    0x7ff7ffffffffffff,                       # the largest signalling payload
    _f64(float("inf")), _f64(float("-inf")), 0, 1 << 63,
    1, (1 << 63) | 1, 0x000fffffffffffff, 0x0010000000000000,   # subnormals, the least normal
    _f64(1.7976931348623157e308), _f64(-1.7976931348623157e308),
    _f64(1.0), _f64(-1.0), _f64(0.5), _f64(3.0), _f64(-2.5), _f64(1e300), _f64(-1e-300),
    _f64(2147483647.0), _f64(2147483648.0), _f64(-2147483649.0), _f64(4294967296.0),
    _f64(9223372036854775807.0), _f64(-9223372036854775808.0),
]
SPECIAL_F32 = [
    0x7fc00000, 0xffc00000, 0x7fc00001, 0xffc0abcd, 0x7f800001, 0xffa00005, 0x7fbfffff,
    _f32(float("inf")), _f32(float("-inf")), 0, 1 << 31, 1, (1 << 31) | 1, 0x007fffff, 0x00800000,
    _f32(3.4028234663852886e38), _f32(-3.4028234663852886e38),
    _f32(1.0), _f32(-1.0), _f32(0.5), _f32(3.0), _f32(-2.5), _f32(1e30), _f32(-1e-30),
    _f32(2147483648.0), _f32(-2147483648.0), _f32(4294967296.0), _f32(1e19), _f32(16777217.0),
]


def _special_ints(bits: int) -> list[int]:
    mask = (1 << bits) - 1
    lo = 1 << (bits - 1)
    vals = [0, 1, -1, lo, lo - 1, lo + 1, lo - 2, 2, -2, 7, 31, 32, 63, 64, 1000, 0x55, 3]
    return sorted({v & mask for v in vals})


def specials(kind: str) -> list[int]:
    """A kind's special values as bit patterns."""
    if kind == "f64":
        return SPECIAL_F64
    if kind == "f32":
        return SPECIAL_F32
    if kind == "bool":
        return [0, 1]
    return _special_ints(8 * WIDTH[kind])


def _random_bits(rng: random.Random, kind: str) -> int:
    if kind == "bool":
        return rng.getrandbits(1)
    if kind in ("f64", "f32") and rng.random() < 0.5:   # a moderate number, often
        v = rng.uniform(-100, 100) * rng.choice([1, 1e-3, 1e3])
        return _f64(v) if kind == "f64" else _f32(v)
    return rng.getrandbits(8 * WIDTH[kind])


def gen_inputs(op, seed: int = SEED) -> tuple[bytes, bytes]:
    """(in, inout) buffers: every pair of special values of each field, then
    N_RANDOM random elements."""
    esz = op["elem_size"]
    fields = [(off, kind) for off, kind in op["fields"]]
    pairs = max(len(specials(k)) ** 2 for _, k in fields)
    n = pairs + N_RANDOM
    rng = random.Random(seed)
    bufs = [bytearray(n * esz), bytearray(n * esz)]
    for i in range(n):
        for j, (off, kind) in enumerate(fields):
            table = specials(kind)
            size = len(table)
            for side in (0, 1):
                if i < pairs:
                    idx = (i + 5 * j) % size if side == 0 else (i // size + 3 * j) % size
                    v = table[idx]
                elif rng.random() < 0.5:
                    v = rng.choice(table)
                else:
                    v = _random_bits(rng, kind)
                bufs[side][i * esz + off: i * esz + off + WIDTH[kind]] = v.to_bytes(WIDTH[kind], "little")
    return bytes(bufs[0]), bytes(bufs[1])


def _is_nan(raw: bytes, kind: str) -> bool:
    if kind == "f64":
        u = int.from_bytes(raw, "little")
        return (u >> 52) & 0x7ff == 0x7ff and u & ((1 << 52) - 1) != 0
    if kind == "f32":
        u = int.from_bytes(raw, "little")
        return (u >> 23) & 0xff == 0xff and u & ((1 << 23) - 1) != 0
    return False


def quiet(raw: bytes, kind: str) -> bytes:
    u = int.from_bytes(raw, "little")
    return (u | (1 << (51 if kind == "f64" else 22))).to_bytes(len(raw), "little")


def mismatches(vm: bytes, nat: bytes, op, ins: list[bytes], most: int = 5) -> list[str]:
    """Bit-exact differences, field by field."""
    esz = op["elem_size"]
    fields = [(off, kind) for off, kind in op["fields"]]
    out = []
    for i in range(len(vm) // esz):
        for off, kind in fields:
            w = WIDTH[kind]
            x, y = vm[i * esz + off: i * esz + off + w], nat[i * esz + off: i * esz + off + w]
            if x == y:
                continue
            show = ", ".join(f"{b[i * esz + o: i * esz + o + WIDTH[k]][::-1].hex()}" for b in ins for o, k in fields)
            out.append(f"element {i} field +{off} ({kind}): vm {x[::-1].hex()} want {y[::-1].hex()}; inputs {show}")
            if len(out) >= most:
                return out
    return out


def two_nan_model(op, ins: list[bytes], nat: bytes, first: int) -> bytes:
    """gcc's results with every field that had a NaN operand replaced by
    the rule: the first operand's NaN if it is one, else the second's,
    quieted (each field of these operators is one binary operation of the
    two fields at its offset)."""
    esz = op["elem_size"]
    out = bytearray(nat)
    a_buf, b_buf = (ins[first], ins[1 - first]) if len(ins) == 2 else (ins[0], ins[0])
    for i in range(len(nat) // esz):
        for off, kind in op["fields"]:
            lo, hi = i * esz + off, i * esz + off + WIDTH[kind]
            a, b = a_buf[lo:hi], b_buf[lo:hi]
            if _is_nan(a, kind):
                out[lo:hi] = quiet(a, kind)
            elif _is_nan(b, kind):
                out[lo:hi] = quiet(b, kind)
    return bytes(out)


def nans_from(op, nat: bytes, order: bytes) -> bytes:
    """gcc's results with every NaN that clang -O0 also gives as a NaN
    taken from clang -O0 (the source order of a + or *)."""
    esz = op["elem_size"]
    out = bytearray(nat)
    for i in range(len(nat) // esz):
        for off, kind in op["fields"]:
            lo, hi = i * esz + off, i * esz + off + WIDTH[kind]
            if _is_nan(nat[lo:hi], kind) and _is_nan(order[lo:hi], kind):
                out[lo:hi] = order[lo:hi]
    return bytes(out)


def corpus_files():
    return sorted(CORPUS.glob("*.c"))


def pending(name: str, needs: dict):
    """Under CAD_OP_PENDING=1 a case waiting for other work is an expected
    failure; by default it runs."""
    if name in needs and os.environ.get("CAD_OP_PENDING") == "1":
        need, why = needs[name]
        return pytest.mark.xfail(reason=f"needs {need}: {why}", strict=False)
    return None


def params(names, needs=None):
    """pytest parameters, the pending ones marked (needs: NEEDS by default)."""
    needs = NEEDS if needs is None else needs
    out = []
    for n in names:
        mark = pending(n, needs)
        out.append(pytest.param(n, id=n, marks=[mark] if mark else []))
    return out


def prepare_corpus(build_dir, work: Path, src: Path):
    """src compiled both ways, inputs written, gcc's results computed (in
    distinct from inout, and in place): [(op, cadop, files)]."""
    cadop = work / (src.stem + ".cadop")
    cadc(build_dir, "op", "compile", src, "-o", cadop, "-I", OPS)
    out = []
    for op in json.loads(cadop.read_text())["ops"]:
        name = op["name"]
        exe = native(work, src, op, NATIVE_EXTRA.get(src.stem, []))
        files = {k: work / f"{name}.{k}" for k in ("in", "inout", "native", "native_self", "order", "order_self")}
        a, b = gen_inputs(op)
        files["in"].write_bytes(a)
        files["inout"].write_bytes(b)
        subprocess.run([str(exe), files["in"], files["inout"], files["native"]], check=True, timeout=60)
        subprocess.run([str(exe), files["in"], files["inout"], files["native_self"], "same"], check=True, timeout=60)
        if src.stem in GCC_COMMUTES:   # the NaNs in source order
            order = work / "order"
            order.mkdir(exist_ok=True)
            exe = native(order, src, op, NATIVE_EXTRA.get(src.stem, []), compiler=["clang", *ORDER_FLAGS])
            subprocess.run([str(exe), files["in"], files["inout"], files["order"]], check=True, timeout=60)
            subprocess.run([str(exe), files["in"], files["inout"], files["order_self"], "same"], check=True,
                           timeout=60)
        out.append((op, cadop, files))
    return out


class Prepared:
    """prepare_corpus of each file, made once (the corpus_prepared fixture,
    tests/ops/conftest.py): the host half here and the kernel half
    (test_kernel_ops.py) compare against the same gcc results.  A file
    cadc rejects raises its AssertionError each time it is asked for."""

    def __init__(self, build_dir, root: Path):
        self.build_dir, self.root = build_dir, root
        self._made: dict[str, list | AssertionError] = {}

    def __call__(self, src: Path):
        if src.stem not in self._made:
            work = self.root / src.stem
            work.mkdir()
            try:
                self._made[src.stem] = prepare_corpus(self.build_dir, work, src)
            except AssertionError as e:
                self._made[src.stem] = e
        made = self._made[src.stem]
        if isinstance(made, AssertionError):
            raise AssertionError(*made.args)
        return made


def expectation(name: str, op, files, same: bool) -> tuple[bytes, list[bytes]]:
    """What the VM must write (gcc's results, or the model's NaNs for a
    FIRST_OPERAND operator) and the input buffers, for in != inout or, with
    same, in == inout."""
    ins = [files["inout"].read_bytes()] if same else [files["in"].read_bytes(), files["inout"].read_bytes()]
    want = files["native_self" if same else "native"].read_bytes()
    if name in GCC_COMMUTES:
        want = nans_from(op, want, files["order_self" if same else "order"].read_bytes())
    if name in FIRST_OPERAND:
        want = two_nan_model(op, ins, want, FIRST_OPERAND[name])
    return want, ins


@pytest.mark.parametrize("name", params(p.stem for p in corpus_files()))
def test_corpus_op_matches_gcc_bit_exactly(build_dir, corpus_prepared, tmp_path, name):
    src = CORPUS / f"{name}.c"
    problems = []
    for op, cadop, files in corpus_prepared(src):
        opname = op["name"]
        vm, vm_self = tmp_path / f"{opname}.vm", tmp_path / f"{opname}.vm_self"
        op_tool(build_dir, "vm", cadop, opname, files["in"], files["inout"], vm)
        op_tool(build_dir, "vmself", cadop, opname, files["inout"], vm_self)
        for what, got, same in (("in != inout", vm, False), ("in == inout", vm_self, True)):
            want, ins = expectation(name, op, files, same)
            bad = mismatches(got.read_bytes(), want, op, ins)
            if bad:
                problems.append(f"{opname} ({what}):\n  " + "\n  ".join(bad))
    assert not problems, "\n".join(problems)


def test_source_fuzzer_smoke(build_dir):
    """fuzz_op_source.py on its first 12 mutants of seed 1 (at most 10 s):
    no crash, timeout, bad JSON, unlocated error, or accepted operator that
    does not compile, run or agree with gcc.  (Mutant 10 finds clang's "too
    many errors emitted" without a location: known under CAD_OP_PENDING=1,
    see fuzz_op_source.KNOWN.)"""
    import fuzz_op_source
    findings = fuzz_op_source.run(build_dir, 10, seed=1, gcc=True, most=12)
    assert not findings, "\n".join(f"{p}: {why}" for why, p in findings)
