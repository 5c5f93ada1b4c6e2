"""cadop/spill_fill.cadop, written by hand: SPILL and FILL through a
divergent jump, the slot written on both paths, s0 and s63, a slot
filled after its register was overwritten.  For elements of three
fields (u64 a, u64 b, i32 c), in and inout:
    inout.a = min(in.a, inout.a)                     (unsigned)
    inout.b = (inout.a - in.a) ^ (in.b + inout.b)    (mod 2^64, the old inout.a)
    inout.c = in.c * inout.c                         (mod 2^32)
bytes 20..23 of inout stay.  Its inputs and this reference, independent of
the VM, for test_ops.py (host) and test_kernel_ops.py (cad.ko)."""

import random
import struct
from pathlib import Path

CADOP = Path(__file__).resolve().parent / "cadop" / "spill_fill.cadop"
NAME, ESZ, FIELDS = "spill_fill", 24, "0:u64,8:u64,16:i32"
M64 = (1 << 64) - 1


def inputs(n: int, seed: int) -> tuple[bytes, bytes]:
    """in and inout, with equal a fields now and then (the jump's edge)."""
    rng = random.Random(seed)
    edges = [0, 1, M64, 1 << 63, (1 << 63) - 1]
    pick = lambda: rng.choice(edges) if rng.random() < 0.3 else rng.getrandbits(64)
    ins, ios = bytearray(), bytearray()
    for _ in range(n):
        a, b = pick(), pick()
        a2 = a if rng.random() < 0.1 else pick()
        ins += struct.pack("<QQQ", a, b, rng.getrandbits(64))
        ios += struct.pack("<QQQ", a2, pick(), rng.getrandbits(64))
    return bytes(ins), bytes(ios)


def expected(ins: bytes, ios: bytes) -> bytes:
    out = bytearray()
    for k in range(0, len(ins), ESZ):
        ia, ib, ic = struct.unpack_from("<QQi", ins, k)
        oa, ob, oc, tail = struct.unpack_from("<QQiI", ios, k)
        c = (ic * oc) & 0xffffffff
        out += struct.pack("<QQII", min(ia, oa), ((oa - ia) ^ (ib + ob)) & M64, c, tail)
    return bytes(out)
