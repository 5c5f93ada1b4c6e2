#!/bin/bash
# disasm_all.sh CADC OUTFILE: `cadc op disasm` of every operator source
# (the corpus, algorithms/ops, bench/ops, the rejection cases, 300
# generated operators), stdout, stderr and exit status, into OUTFILE.
set -u
CADC=$(realpath "$1"); OUT=$(realpath "$2"); ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SRC=$(mktemp -d /tmp/opsrc.XXXX)
cd $ROOT/tests/ops && /usr/bin/python3 - "$SRC" <<'PY'
import sys, pathlib
sys.path.insert(0, '.')
from test_op_rejections import CASES, SIGNATURES, HEAD, SIG
import gen_ops
out = pathlib.Path(sys.argv[1])
for name, case in CASES.items():
    body = case[0]; opts = case[5] if len(case) > 5 else {}
    pre = "".join(p + "\n" for p in opts.get("pre", []))
    (out / f"rej_{name}.c").write_text(HEAD + pre + SIG + "\n".join(body) + "\n}\n")
for name, case in SIGNATURES.items():
    (out / f"sig_{name}.c").write_text(HEAD + case[0])
for seed in (1, 2, 3):
    for fname, text in gen_ops.generate(seed, 100):
        (out / f"gen{seed}_{fname}").write_text(text)
PY
: > $OUT
for f in $ROOT/tests/ops/corpus/*.c $ROOT/algorithms/ops/*.c $ROOT/bench/ops/*.c $ROOT/tests/ops/*.c $SRC/*.c; do
  echo "=== ${f#$ROOT/}" | sed "s|$SRC|GEN|" >> $OUT
  (cd $(dirname $f) && timeout 60 $CADC op disasm -I $ROOT/algorithms/ops $(basename $f) >> $OUT 2>&1; echo "rc=$?" >> $OUT)
done
ls $SRC | wc -l
rm -rf $SRC
