#!/bin/sh
# make demo: the compiler and the core at work, end to end.
#   1. cadc proves a pipelined broadcast of the standard library on its
#      declared sweep (every P from 1 to 33, every root, three segment
#      sizes), then compiles one instance into per-rank CAD programs and
#      disassembles one of them after the core verifier accepted it;
#   2. cadc finds the bug in a broken broadcast, with the source line, the
#      instance, the rank and what the wrong output holds instead;
#   3. the JSON form: DSL -> JSON -> DSL gives back the same text;
#   4. core_demo runs CAD programs through the core's executor (see
#      demo/core_demo.c).
# Usage: demo/demo.sh [BUILD_DIR]; exits non-zero if any step does not do
# what it says.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=$(cd "${1:-$root/build}" && pwd)
cadc="$build/bin/cadc"
# Not $build/demo: that folder is CMake's (the demo directory's install
# script and CTest file), which `make install` and ctest read.
out="$build/demo-out"
rm -rf "$out"
mkdir -p "$out"
cd "$root"

step() { printf '\n== %s\n' "$*"; }

step "cadc verify algorithms/bcast_chain_pipeline.cad (its declared sweep)"
"$cadc" verify algorithms/bcast_chain_pipeline.cad

step "cadc compile: one instance, P=4 n=100 seg=32, one program per rank"
"$cadc" compile algorithms/bcast_chain_pipeline.cad --ranks 4 --size 100 --param seg=32 -o "$out"

step "cadc disasm: rank 1's program (the core verifier accepts it first)"
"$cadc" disasm "$out/bcast_chain_pipeline.1.cadbc"

step "cadc verify demo/bcast_forgets_last.cad: a broadcast with a bug"
if "$cadc" verify demo/bcast_forgets_last.cad --max-failures 1 -j 1 2>&1; then
	echo "demo: the broken broadcast verified" >&2
	exit 1
fi

step "cadc fmt: DSL -> JSON -> DSL"
"$cadc" fmt --to json algorithms/allreduce_recursive_doubling.cad -o "$out/allreduce.json"
head -c 400 "$out/allreduce.json"
printf '...\n'
"$cadc" fmt --to dsl "$out/allreduce.json" -o "$out/allreduce.cad"
"$cadc" fmt --to dsl algorithms/allreduce_recursive_doubling.cad -o "$out/allreduce.canonical.cad"
cmp "$out/allreduce.cad" "$out/allreduce.canonical.cad"
echo "the round trip gives back the canonical text, byte for byte"

step "core_demo: CAD programs through the core's verifier and executor"
"$build/bin/core_demo"

step "cadrun -n 4 rt_check: every collective through cadrt, checked against references"
"$build/bin/cadrun" -n 4 "$build/bin/rt_check" --coll all --sizes 0,7,1000,100000

step "cadrun -n 3 rt_cad: a pipelined chain broadcast built by hand (the KACC interface)"
"$build/bin/cadrun" -n 3 "$build/bin/rt_cad"

step "mpirun -n 2 with libcadmpi.so: an unmodified MPI program, cadrt against Open MPI"
mpirun --allow-run-as-root --oversubscribe -n 2 -x LD_PRELOAD="$(cd "$build" && pwd)/lib/libcadmpi.so" \
	-x CADMPI_STATS=1 "$build/bin/mpi_check" --quick
step "cad.ko in qemu: the kernel engine (the host cannot load modules)"
/usr/bin/python3 demo/kernel_demo.py "$build"
printf '\ndemo: all steps did what they say\n'
