"""cad.ko's DKMS tree (kmod/dkms.sh, make dkms-install): DKMS itself builds
the module from it against the Debian kernel's headers, in a private DKMS
tree (no system state touched), and the module is the one the build
makes: the same kernel, the same parameters."""

import shutil
import subprocess

import pytest

from vm import kernel_version

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def modinfo(path, field):
    return subprocess.run(["modinfo", "-F", field, str(path)], capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(not shutil.which("dkms"), reason="dkms is not installed (make deps installs it)")
def test_dkms_builds_the_module(build_dir, tmp_path):
    kver = kernel_version()
    version = "0.1.0"
    src = tmp_path / "src" / f"cad-{version}"
    subprocess.run([str(ROOT / "kmod" / "dkms.sh"), str(ROOT), str(src), version], check=True, timeout=60)
    assert (src / "dkms.conf").read_text().count(f'PACKAGE_VERSION="{version}"') == 1
    tree = tmp_path / "dkms"
    tree.mkdir()
    r = subprocess.run(["dkms", "build", "-m", "cad", "-v", version, "-k", kver, "--sourcetree", str(tmp_path / "src"),
                        "--dkmstree", str(tree)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    ko = tree / "cad" / version / kver / "x86_64" / "module" / "cad.ko"
    if not ko.exists():  # compressed, where the kernel's modules are
        ko = next((tree / "cad" / version / kver / "x86_64" / "module").glob("cad.ko*"))
    assert modinfo(ko, "vermagic").split()[0] == kver
    built = build_dir / "kmod" / "cad.ko"
    assert sorted(modinfo(ko, "parm").splitlines()) == sorted(modinfo(built, "parm").splitlines())
    assert len(modinfo(ko, "parm").splitlines()) > 5
