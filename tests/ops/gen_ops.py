"""Generated user-defined operators for the differential test: random
structs of scalar fields and random bodies (arithmetic that wraps, guarded
division, masked shifts, compares, ?:, if/else, conversions between every
pair of kinds, math builtins, a constant-bound loop), deterministic for a
seed.  Each is valid C that gcc compiles natively with -fwrapv and that the
operator subset accepts."""

import random

KINDS = {
    "i8": "int8_t", "u8": "uint8_t", "i16": "int16_t", "u16": "uint16_t",
    "i32": "int32_t", "u32": "uint32_t", "i64": "int64_t", "u64": "uint64_t",
    "f32": "float", "f64": "double",
}
INTS = [k for k in KINDS if k[0] in "iu"]


def _shift_mask(kind: str) -> int:
    return 63 if kind in ("i64", "u64") else 31


class _Gen:
    def __init__(self, rng: random.Random, fields: dict[str, str]):
        self.rng = rng
        self.fields = fields

    def leaf(self, want_float: bool | None = None) -> tuple[str, str]:
        names = list(self.fields)
        if want_float is not None:
            names = [n for n in names if (self.fields[n][0] == "f") == want_float] or names
        name = self.rng.choice(names)
        side = self.rng.choice(["in", "inout"])
        return f"{side}->{name}", self.fields[name]

    def expr(self, kind: str, depth: int) -> str:
        """A C expression whose value is converted to `kind` by the caller."""
        r = self.rng
        if depth == 0 or r.random() < 0.25:
            if r.random() < 0.15:
                return r.choice(["1", "3", "-2", "7", "100", "0.5", "-1.25"]) if kind[0] == "f" else r.choice(["1", "3", "-2", "7", "255"])
            return self.leaf(kind[0] == "f" if r.random() < 0.8 else None)[0]
        a = self.expr(kind, depth - 1)
        b = self.expr(kind, depth - 1)
        ta = KINDS[kind]
        if kind[0] == "f":
            op = r.choice(["+", "-", "*", "/", "neg", "fabs", "sqrt", "cmp", "cast"])
            if op in "+-*/":
                return f"(({ta})({a}) {op} ({ta})({b}))"
            if op == "neg":
                return f"(-({ta})({a}))"
            if op == "fabs":
                return f"fabs((double)({a}))"
            if op == "sqrt":
                return f"sqrt(fabs((double)({a})))"
            if op == "cmp":
                c = r.choice(["<", "<=", ">", ">=", "==", "!="])
                return f"(({a}) {c} ({b}) ? ({ta})({a}) : ({ta})({b}))"
            src = r.choice(INTS)
            return f"(({ta})({KINDS[src]})({a}))"
        op = r.choice(["+", "-", "*", "&", "|", "^", "~", "neg", "<<", ">>", "/", "%", "cmp", "cast", "not"])
        if op in ("+", "-", "*", "&", "|", "^"):
            return f"(({ta})({a}) {op} ({ta})({b}))"
        if op == "~":
            return f"(~({ta})({a}))"
        if op == "neg":
            return f"(-({ta})({a}))"
        if op == "not":
            return f"(!({a}))"
        if op in ("<<", ">>"):
            return f"(({ta})({a}) {op} (({ta})({b}) & {_shift_mask(kind)}))"
        if op in ("/", "%"):
            return (f"(({ta})({b}) == 0 ? ({ta})({a}) : ({ta})({a}) {op} "
                    f"(({ta})({b}) == ({ta})-1 ? ({ta})1 : ({ta})({b})))")
        if op == "cmp":
            c = r.choice(["<", "<=", ">", ">=", "==", "!="])
            return f"(({a}) {c} ({b}))"
        src = r.choice(list(KINDS))
        return f"(({ta})({KINDS[src]})({a}))"


def generate(seed: int, count: int) -> list[tuple[str, str]]:
    """(file name, C text) of `count` operator files."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        nf = rng.randint(1, 4)
        fields = {f"f{j}": rng.choice(list(KINDS)) for j in range(nf)}
        g = _Gen(rng, fields)
        lines = ['#include "cad_op.h"', "#include <math.h>", "", f"struct e{i} {{"]
        lines += [f"\t{KINDS[k]} {n};" for n, k in fields.items()]
        lines += ["};", "", f"CAD_OP({rng.choice(['commutative', 'noncommutative'])})",
                  f"void gen{i}(const struct e{i} *in, struct e{i} *inout)", "{"]
        shape = rng.choice(["plain", "if", "loop", "early"])
        targets = list(fields)
        rng.shuffle(targets)
        if shape == "early":
            (a, _), (b, _) = g.leaf(), g.leaf()
            lines.append(f"\tif (({a}) > ({b}))")
            lines.append("\t\treturn;")
        if shape == "if":
            (a, _), (b, _) = g.leaf(), g.leaf()
            lines.append(f"\tif (({a}) < ({b})) {{")
            for n in targets[: len(targets) // 2 + 1]:
                lines.append(f"\t\tinout->{n} = ({KINDS[fields[n]]})({g.expr(fields[n], 2)});")
            lines.append("\t} else {")
            for n in targets[len(targets) // 2:]:
                lines.append(f"\t\tinout->{n} = ({KINDS[fields[n]]})({g.expr(fields[n], 2)});")
            lines.append("\t}")
        elif shape == "loop":
            n = targets[0]
            t = KINDS[fields[n]]
            lines.append(f"\t{t} acc = inout->{n};")
            lines.append(f"\tfor (int k = 0; k < {rng.randint(1, 4)}; k++)")
            lines.append(f"\t\tacc = ({t})(acc + ({t})({g.expr(fields[n], 1)}) * ({t})k);")
            lines.append(f"\tinout->{n} = acc;")
        else:
            for n in targets:
                lines.append(f"\t{KINDS[fields[n]]} t_{n} = ({KINDS[fields[n]]})({g.expr(fields[n], 3)});")
            for n in targets:
                lines.append(f"\tinout->{n} = t_{n};")
        lines.append("}")
        out.append((f"gen{i}.c", "\n".join(lines) + "\n"))
    return out
