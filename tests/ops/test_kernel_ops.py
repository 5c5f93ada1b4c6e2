"""User-defined operators inside the kernel (qemu): cad.ko runs the VM.

- Differential: every operator of algorithms/ops/ and the generated ones of
  test_ops.py, loaded into cad.ko as a one-rank program (kop_run.c) over
  random elements biased to special values; the result must equal what the
  same C compiled natively by gcc computed on the host.  Also the
  hand-written spill_fill.cadop against its reference (spill_fill.py).
- End to end: uop_check under cadrun with CADRT_ENGINE=kernel for N in
  {2, 3, 4, 8}: allreduce with complex multiply, affine composition (order
  checked) and maxloc, reduce at every root, reduce_scatter_block,
  persistent starts.
- Afterwards the module's counters are zero, it unloads, and the kernel log
  has no warning.
- The corpus (tests/ops/corpus, test_op_corpus.py), in the same boot:
  every operator in cad.ko, compared bit for bit with what
  test_op_corpus.py expects (gcc's results, made once for both halves;
  NaN payloads and signs included).  in != inout only: cad.ko refuses a program whose buffers
  overlap ("buffers 0 and 1 overlap", -EINVAL), so in == inout is the user
  space half's.  An operator today's compiler rejects fails its case
  without failing the others.

cadc and gcc build each operator once for this file and test_ops.py (the
op_builds fixture); the data differ (N_KERNEL elements, another seed)."""

import subprocess
from pathlib import Path

import pytest

import spill_fill
from gen_ops import generate
from test_op_corpus import NEEDS, NEEDS_KERNEL, corpus_files, expectation, params
from test_ops import OPS, prepare
from vm import COUNT_AND_UNLOAD, cad_vm, run_cases, scaled

N_KERNEL = 1000


def user_op_cases(build_dir, vm, tmp: Path, builds) -> dict[str, str]:
    """The differential cases and uop_check's: their files added to vm."""
    cases = {}
    sources = [p for p in sorted(OPS.glob("*.c"))]
    gen_dir = tmp / "gen"
    gen_dir.mkdir()
    for name, text in generate(seed=6, count=40):
        (gen_dir / name).write_text(text)
        sources.append(gen_dir / name)
    for src in sources:
        work = tmp / src.stem
        work.mkdir()
        for op, cadop, files in prepare(build_dir, work, src, seed=7, n=N_KERNEL, builds=builds):
            name = op["name"]
            image = work / f"{name}.img"
            subprocess.run([str(build_dir / "bin" / "op_tool"), "image", str(cadop), name, str(N_KERNEL), str(image)],
                           check=True)
            for kind, path in (("img", image), ("in", files["in"]), ("io", files["inout"]),
                               ("exp", files["native"])):
                vm.add_file(path, f"/ops/{name}.{kind}")
            fields = ",".join(f"{off}:{kind}" for off, kind in op["fields"])
            cases[f"kop_{name}"] = (f"kop_run /ops/{name}.img /ops/{name}.in /ops/{name}.io /ops/{name}.exp "
                                    f"{op['elem_size']} {fields}")
    # SPILL and FILL, hand-written (spill_fill.py)
    ins, ios = spill_fill.inputs(N_KERNEL, seed=12)
    work = tmp / "spill_fill"
    work.mkdir()
    for kind, data in (("in", ins), ("io", ios), ("exp", spill_fill.expected(ins, ios))):
        (work / kind).write_bytes(data)
        vm.add_file(work / kind, f"/ops/spill_fill.{kind}")
    subprocess.run([str(build_dir / "bin" / "op_tool"), "image", str(spill_fill.CADOP), spill_fill.NAME,
                    str(N_KERNEL), str(work / "img")], check=True)
    vm.add_file(work / "img", "/ops/spill_fill.img")
    cases["kop_spill_fill"] = (f"kop_run /ops/spill_fill.img /ops/spill_fill.in /ops/spill_fill.io "
                               f"/ops/spill_fill.exp {spill_fill.ESZ} {spill_fill.FIELDS}")
    for n in (2, 3, 4, 8):
        cases[f"uop_{n}"] = f"CADRT_ENGINE=kernel cadrun -n {n} --timeout {scaled(200)} uop_check"
    return cases


def corpus_cases(build_dir, vm, tmp: Path, prepared) -> tuple[dict[str, str], dict[str, str]]:
    """The corpus's cases, named corpus:FILE:OP, their files added to vm
    under /corpus; and {file: why it did not compile}."""
    cases, broken = {}, {}
    for src in corpus_files():
        work = tmp / src.stem
        work.mkdir()
        try:
            made = prepared(src)
        except AssertionError as e:   # cadc rejects it
            broken[src.stem] = str(e)
            continue
        for op, cadop, files in made:
            name = op["name"]
            count = len(files["inout"].read_bytes()) // op["elem_size"]
            image = work / f"{name}.img"
            subprocess.run([str(build_dir / "bin" / "op_tool"), "image", str(cadop), name, str(count), str(image)],
                           check=True)
            want, _ = expectation(src.stem, op, files, False)
            (work / f"{name}.exp").write_bytes(want)
            for kind, path in (("img", image), ("in", files["in"]), ("io", files["inout"]),
                               ("exp", work / f"{name}.exp")):
                vm.add_file(path, f"/corpus/{name}.{kind}")
            fields = ",".join(f"{off}:{kind}" for off, kind in op["fields"])
            cases[f"corpus:{src.stem}:{name}"] = (
                f"kop_run /corpus/{name}.img /corpus/{name}.in /corpus/{name}.io /corpus/{name}.exp "
                f"{op['elem_size']} {fields} exact")
    return cases, broken


@pytest.fixture(scope="module")
def kernel_run(build_dir, tmp_path_factory, op_builds, corpus_prepared):
    """One boot for the differential cases, uop_check and the whole corpus:
    (the run, {corpus file: why it did not compile})."""
    vm = cad_vm(build_dir)
    for program in ("kop_run", "cadrun", "uop_check"):
        vm.add_program(build_dir / "bin" / program)
    cases = user_op_cases(build_dir, vm, tmp_path_factory.mktemp("kops"), op_builds)
    corpus, broken = corpus_cases(build_dir, vm, tmp_path_factory.mktemp("kcorpus"), corpus_prepared)
    run = run_cases(vm, {**cases, **corpus}, before="insmod /cad.ko", after=COUNT_AND_UNLOAD, timeout=1500)
    return run, broken


def test_user_ops_in_the_kernel(kernel_run):
    run, _ = kernel_run
    assert run.exit_code == 0, run.console[-4000:]
    mine = {name: case for name, case in run.cases.items() if not name.startswith("corpus:")}
    for name, case in mine.items():
        assert case.status == 0, f"{name}: {case.command}\n{case.output}"
        if name.startswith("kop_"):
            assert f"kop_run: ok {N_KERNEL} elements" in case.output, case.output
        else:
            assert "uop_check: ok" in case.output and "engine kernel" in case.output, case.output
    kop = [c for n, c in mine.items() if n.startswith("kop_")]
    print(f"{len(kop)} operators compared in the kernel, "
          f"{sum(c.seconds for c in kop):.1f} s; uop_check: " +
          ", ".join(f"{n} {c.seconds:.1f} s" for n, c in mine.items() if n.startswith("uop_")))
    print(run.cases["kop_complex_mul"].output.strip(), "|", run.cases["uop_8"].output.strip())
    assert "@@COUNTERS 0 0" in run.output and "@@UNLOADED 0" in run.output, run.output[-2000:]
    assert not run.kernel_problems(), "\n".join(run.kernel_problems())


@pytest.mark.parametrize("name", params((p.stem for p in corpus_files()), {**NEEDS, **NEEDS_KERNEL}))
def test_corpus_op_in_the_kernel(kernel_run, name):
    run, broken = kernel_run
    assert name not in broken, broken.get(name)
    mine = {k: c for k, c in run.cases.items() if k.startswith("corpus:") and k.split(":")[1] == name}
    assert mine, f"no case for {name}"
    bad = [f"{k}: {c.command}\n{c.output}" for k, c in mine.items()
           if c.status != 0 or "kop_run: ok" not in c.output]
    assert not bad, "\n".join(bad)


def test_corpus_leaves_the_kernel_clean(kernel_run):
    run, _ = kernel_run
    assert run.exit_code == 0, run.console[-4000:]
    assert "@@COUNTERS 0 0" in run.output and "@@UNLOADED 0" in run.output, run.output[-2000:]
    assert not run.kernel_problems(), "\n".join(run.kernel_problems())
