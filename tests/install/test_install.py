"""`make install` (cmake --install): the installed tree works on its own.

The tree is installed into a temporary prefix and then moved, so that
anything still pointing into the build folder or at the prefix it was
installed to would show: programs are compiled against the installed
headers through the installed pkg-config files, run under the installed
cadrun, load the installed standard library (CADRT_VERBOSE says which),
and an MPI program runs its collectives through the installed
libcadmpi.so."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mpi"))
from mpijob import clean_env, mpirun, through  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

ALLREDUCE = r"""
#include <cadrt/cadrt.h>
#include <stdio.h>

int main(void) {
  int err = cadrt_init();
  if (err) { fprintf(stderr, "cadrt_init: %s\n", cadrt_error_message()); return 1; }
  cadrt_comm w = cadrt_comm_world();
  int rank = 0, size = 0;
  cadrt_comm_rank(w, &rank);
  cadrt_comm_size(w, &size);
  double in[1000], out[1000];
  for (int i = 0; i < 1000; i++) in[i] = rank + i;
  cadrt_request r;
  err = cadrt_iallreduce(in, out, 1000, CADRT_DOUBLE, CADRT_SUM, w, &r);
  if (!err) err = cadrt_wait(&r);
  if (err) { fprintf(stderr, "allreduce: %s\n", cadrt_error_message()); return 1; }
  for (int i = 0; i < 1000; i++)
    if (out[i] != size * (size - 1) / 2.0 + (double)size * i) { fprintf(stderr, "wrong at %d\n", i); return 1; }
  printf("rank %d ok\n", rank);
  return cadrt_finalize();
}
"""

MPI_PROGRAM = r"""
#include <mpi.h>
#include <cadrt/cadrt_mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long in = rank + 1, out = 0;
  MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  int bad = out != (long)size * (size + 1) / 2, err = 0;
  /* With an argument, through cadrt_mpi.h too (without libcadmpi.so, which
   * initialises cadrt itself): the cadrt-mpi pkg-config module links it. */
  cadrt_comm c;
  if (argc > 1) err = cadrt_init_mpi(MPI_COMM_WORLD);
  if (argc > 1 && !err) err = cadrt_comm_from_mpi(MPI_COMM_WORLD, &c);
  if (argc > 1 && !err) {
    cadrt_request r;
    long v = rank, s = 0;
    err = cadrt_iallreduce(&v, &s, 1, CADRT_INT64, CADRT_SUM, c, &r);
    if (!err) err = cadrt_wait(&r);
    bad |= s != (long)size * (size - 1) / 2;
  }
  if (err) fprintf(stderr, "cadrt: %s\n", cadrt_error_message());
  printf("rank %d %s\n", rank, bad || err ? "wrong" : "ok");
  MPI_Finalize();
  return bad || err;
}
"""


@pytest.fixture(scope="module")
def prefix(build_dir, tmp_path_factory):
    """The tree installed into one folder, then moved to another."""
    base = tmp_path_factory.mktemp("install")
    first = base / "first"
    run = subprocess.run(["cmake", "--install", str(build_dir), "--prefix", str(first)], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    moved = base / "moved"
    first.rename(moved)
    return moved


def pkg_config(prefix, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"))
    run = subprocess.run(["pkg-config", *args], capture_output=True, text=True, env=env, timeout=60)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def build(prefix, tmp_path, compiler, name, text, module):
    """name.c holding text, compiled by compiler with pkg-config's flags
    for module from the installed tree."""
    src = tmp_path / f"{name}.c"
    src.write_text(text)
    exe = tmp_path / name
    cc = subprocess.run([compiler, "-std=c11", "-Wall", "-Werror", "-o", str(exe), str(src),
                         *pkg_config(prefix, "--cflags", "--libs", module)], capture_output=True, text=True)
    assert cc.returncode == 0, cc.stderr
    return exe


def ranks_said_ok(run, n):
    assert run.returncode == 0, run.stdout + run.stderr
    assert sorted(run.stdout.split("\n"))[1:] == [f"rank {i} ok" for i in range(n)]


def test_the_tree_holds_what_the_readme_lists(prefix, build_dir):
    for f in ["bin/cadc", "bin/cadrun", "lib/libcadrt.so", "lib/libcadrt_mpi.so", "lib/libcadmpi.so",
              "lib/libcadc-opc.so", "lib/cad-std.cadlib", "include/cadrt/cadrt.h", "include/cadrt/cadrt_mpi.h",
              "include/cadrt/cadrt_net.h", "include/cad/cad.h", "lib/pkgconfig/cadrt.pc",
              "lib/pkgconfig/cadrt-mpi.pc", "share/cad/algorithms/rules.json",
              "share/cad/algorithms/bcast_binomial.cad", "share/cad/algorithms/ops/maxloc.c",
              "share/man/man1/cadc.1", "share/man/man1/cadrun.1", "share/man/man3/cadrt.3", "share/man/man4/cad.4",
              "share/cad/schemas/algorithm.schema.json",
              "share/cad/schemas/cadlib.schema.json", "lib/cmake/cadrt/cadrtConfig.cmake",
              "share/bash-completion/completions/cadc", "share/bash-completion/completions/cadrun"]:
        assert (prefix / f).is_file(), f
    page = subprocess.run(["man", "-M", str(prefix / "share" / "man"), "cadrun"], capture_output=True, text=True,
                          env={**os.environ, "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"})
    assert page.returncode == 0 and "cadrun - runs N local processes" in page.stdout, page
    if (build_dir / "kmod" / "cad.ko").exists():
        assert list(prefix.glob("lib/modules/*/extra/cad.ko"))
    # Nothing installed points into the build folder.
    for f in [*prefix.glob("bin/*"), *prefix.glob("lib/*.so")]:
        dyn = subprocess.run(["readelf", "-d", str(f)], capture_output=True, text=True).stdout
        assert str(build_dir) not in dyn, f


def test_a_program_built_with_pkg_config_runs_under_the_installed_cadrun(prefix, tmp_path):
    exe = build(prefix, tmp_path, "cc", "allreduce", ALLREDUCE, "cadrt")
    env = {k: v for k, v in clean_env().items() if k != "LD_LIBRARY_PATH"}
    env["CADRT_VERBOSE"] = "1"
    run = subprocess.run([str(prefix / "bin" / "cadrun"), "-n", "3", str(exe)], capture_output=True, text=True,
                         env=env, timeout=120)
    ranks_said_ok(run, 3)
    # The standard library beside the installed libcadrt.so.
    assert f"cadrt: algorithm library {prefix / 'lib' / 'cad-std.cadlib'}\n" in run.stderr


def test_libraries_carry_their_abi_version(prefix):
    """Programs link libcadrt.so.MAJOR (the SONAME), a link to the file of
    the full version; libcadmpi.so, preloaded by path, is unversioned."""
    for lib in ("libcadrt", "libcadrt_mpi"):
        dyn = subprocess.run(["readelf", "-d", str(prefix / "lib" / f"{lib}.so")], capture_output=True,
                             text=True, check=True).stdout
        assert f"Library soname: [{lib}.so.0]" in dyn, dyn
        assert (prefix / "lib" / f"{lib}.so.0").resolve().name == f"{lib}.so.0.1.0"
    dyn = subprocess.run(["readelf", "-d", str(prefix / "lib" / "libcadrt_mpi.so")], capture_output=True, text=True,
                         check=True).stdout
    assert "Shared library: [libcadrt.so.0]" in dyn, dyn
    assert "Library soname: [libcadmpi.so]" in subprocess.run(["readelf", "-d", str(prefix / "lib" / "libcadmpi.so")],
                                                              capture_output=True, text=True, check=True).stdout


def test_a_cmake_project_finds_the_package(prefix, tmp_path):
    """find_package(cadrt CONFIG) from the moved tree: cadrt::cadrt for a
    cadrt program, cadrt::mpi for one under MPI; both run."""
    (tmp_path / "allreduce.c").write_text(ALLREDUCE)
    (tmp_path / "mpi.c").write_text(MPI_PROGRAM)
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.20)\nproject(user C)\n"
        "find_package(cadrt 0.1 CONFIG REQUIRED)\n"
        "add_executable(allreduce allreduce.c)\ntarget_link_libraries(allreduce cadrt::cadrt)\n"
        "add_executable(mpi mpi.c)\ntarget_link_libraries(mpi cadrt::mpi)\n")
    build_dir = tmp_path / "build"
    for cmd in (["cmake", "-S", str(tmp_path), "-B", str(build_dir), f"-DCMAKE_PREFIX_PATH={prefix}"],
                ["cmake", "--build", str(build_dir)]):
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
    env = {k: v for k, v in clean_env().items() if k != "LD_LIBRARY_PATH"}
    run = subprocess.run([str(prefix / "bin" / "cadrun"), "-n", "2", str(build_dir / "allreduce")],
                         capture_output=True, text=True, env=env, timeout=120)
    ranks_said_ok(run, 2)
    ranks_said_ok(mpirun(prefix, 2, "cadrt", preload=False, program=build_dir / "mpi"), 2)
    # A major version the tree is not: refused.
    (tmp_path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.20)\nproject(user C)\n"
                                             "find_package(cadrt 1.0 CONFIG REQUIRED)\n")
    run = subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "b2"), f"-DCMAKE_PREFIX_PATH={prefix}"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "cadrtConfig.cmake, version: 0.1.0" in run.stderr, run.stderr


def test_the_installed_cadrun_info_points_into_the_tree(prefix, build_dir):
    """cadrun --info from the moved tree: its own library, and (where the
    module was built) the installed cad.ko to load."""
    r = subprocess.run([str(prefix / "bin" / "cadrun"), "--info"], capture_output=True, text=True, timeout=60,
                       env={"PATH": os.environ["PATH"]})
    assert r.returncode == 0 and f"library    {prefix / 'lib' / 'cad-std.cadlib'}\n" in r.stdout, r.stdout
    kos = list(prefix.glob(f"lib/modules/{os.uname().release}/extra/cad.ko"))
    if kos:
        assert f"insmod {kos[0]})" in r.stdout, r.stdout
    else:  # built for another kernel than this one (the VM's)
        assert "load the module as root: modprobe cad (make install puts cad.ko under" in r.stdout, r.stdout


def test_the_installed_cadc_checks_compiles_operators_and_selects(prefix, tmp_path):
    cadc = str(prefix / "bin" / "cadc")
    algorithms = prefix / "share" / "cad" / "algorithms"
    run = subprocess.run([cadc, "check", str(algorithms / "bcast_binomial.cad")], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    # The operator compiler is a module the tool loads from ../lib.
    run = subprocess.run([cadc, "op", "compile", str(algorithms / "ops" / "maxloc.c"), "-o", str(tmp_path / "m.cadop")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "m.cadop").stat().st_size > 0
    # A library of one's own from the installed sources, selected from.
    mine = tmp_path / "mine"
    shutil.copytree(algorithms, mine)
    run = subprocess.run([cadc, "select", str(mine), "bcast", "--ranks", "4", "--sizes", "1"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "bcast_binomial" in run.stdout


def test_an_mpi_program_runs_through_the_installed_libcadmpi(prefix, tmp_path):
    exe = build(prefix, tmp_path, "mpicc", "mpi", MPI_PROGRAM, "cadrt-mpi")
    # Unmodified: MPI_Allreduce through the installed libcadmpi.so (mpirun
    # preloads the one in its first argument's lib folder).
    run = mpirun(prefix, 2, env={"CADMPI_STATS": "1"}, program=exe)
    ranks_said_ok(run, 2)
    counts = through(run.stderr)
    assert len(counts) == 2 and all(n >= 1 for n, _ in counts), run.stderr
    # cadrt_mpi.h, through the installed libcadrt_mpi.so (its rpath).
    ranks_said_ok(mpirun(prefix, 2, "cadrt", preload=False, program=exe), 2)
