"""cadc/completion/cad.bash: bash completion of cadc and cadrun, from the
commands' own --help (real bash, real commands)."""

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def complete(build_dir, function, *words):
    """COMPREPLY of function for the command line words (the last one being
    completed), in a bash with the completion file sourced."""
    script = (f"source {ROOT / 'cadc' / 'completion' / 'cad.bash'}\n"
              f"PATH={build_dir / 'bin'}:$PATH\n"
              "COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); " + function + "\n"
              "printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    r = subprocess.run(["bash", "-c", script, "bash", *words], capture_output=True, text=True, timeout=60,
                       cwd=build_dir)
    assert r.returncode == 0 and not r.stderr, r
    return [w for w in r.stdout.split("\n") if w]


@pytest.mark.parametrize("words,expected", [
    (["cadc", "ve"], ["verify"]),
    (["cadc", "verify", "--ra"], ["--ranks"]),
    (["cadc", "verify", "--max"], ["--max-failures"]),
    (["cadc", "op", "c"], ["check", "compile"]),
    (["cadc", "op", "compile", "--js"], ["--json"]),
    (["cadc", "lib", ""], ["show"]),
    (["cadc", "-"], ["-h", "--help", "--version"]),
])
def test_cadc(build_dir, words, expected):
    assert sorted(complete(build_dir, "_cadc", *words)) == sorted(expected)


def test_cadc_every_subcommand(build_dir):
    listed = subprocess.run([str(build_dir / "bin" / "cadc"), "--help"], capture_output=True, text=True,
                            timeout=30).stdout.split("Subcommands:")[1]
    subs = [line.split()[0] for line in listed.splitlines() if line.startswith("  ")]
    assert len(subs) >= 10 and sorted(complete(build_dir, "_cadc", "cadc", "")) == sorted(subs)


def test_cadc_files_after_the_subcommand(build_dir):
    assert "CMakeCache.txt" in complete(build_dir, "_cadc", "cadc", "verify", "CMakeC")


@pytest.mark.parametrize("words,expected", [
    (["cadrun", "--ti"], ["--timeout"]),
    (["cadrun", "--n"], ["--np"]),
    (["cadrun", "--s"], ["--settings", "--settings=markdown"]),
    (["cadrun", "--bind", "c"], ["core"]),
    (["cadrun", "-n", "2", "--timeout", ""], []),
])
def test_cadrun(build_dir, words, expected):
    assert sorted(complete(build_dir, "_cadrun", *words)) == sorted(expected)


def test_cadrun_program_then_its_files(build_dir):
    assert "cadrun" in complete(build_dir, "_cadrun", "cadrun", "-n", "2", "cadr")
    assert "CMakeCache.txt" in complete(build_dir, "_cadrun", "cadrun", "-n", "2", "./prog", "CMakeC")
