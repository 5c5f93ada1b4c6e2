#!/usr/bin/python3
"""The kernel module at work, in qemu (the host cannot load modules):
insmod cad.ko; a pipelined broadcast whose receivers only read their
status page while the data arrives; every collective through cadrt's
kernel engine under cadrun; the module's counters; rmmod.

    demo/kernel_demo.py BUILD_DIR"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "kmod"))
from vm import cad_vm  # noqa: E402

build = Path(sys.argv[1] if len(sys.argv) > 1 else "build").resolve()
vm = cad_vm(build)
vm.add_file(build / "bin" / "kcad_check", "/bin/kcad_check")
vm.add_program(build / "bin" / "cadrun")
vm.add_program(build / "bin" / "rt_check")
r = vm.run("""
insmod /cad.ko
echo "-- kcad_check pipeline 4 1000000 16: ranks 1-3 start, then only read their status page"
kcad_check pipeline 4 1000000 16
echo "-- CADRT_ENGINE=kernel cadrun -n 4 rt_check --coll all"
CADRT_ENGINE=kernel cadrun -n 4 rt_check --coll all --sizes 0,7,1000,100000
echo "-- pinned pages, live objects: $(cat /sys/module/cad/parameters/pinned_pages) $(cat /sys/module/cad/parameters/live_objects)"
rmmod cad
echo "-- unloaded"
""", timeout=600)
print(r.output, end="")
if r.exit_code != 0 or r.kernel_problems() or "-- unloaded" not in r.output:
    print(r.console[-3000:], file=sys.stderr)
    sys.exit("kernel demo: the VM run failed")
print(f"(qemu, software emulation: {r.seconds:.0f} s; kernel log clean)")
