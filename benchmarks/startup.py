"""Start-up: the CPU of ``vidaudit --help`` and of commands that need one suite, and what they import.

Side by side in one invocation: the sources of ``--before`` (a git revision, default 3e94b6f: every command
imported every suite and scipy) exported with ``git archive``, and this checkout's ``src``. Each command runs
in a fresh interpreter as the ``vidaudit`` script runs it (``from vidaudit.cli import app; app()``), the two
trees alternating, ``--repeats`` times; the CPU is the child's user + system time (``os.wait4``: on a loaded
machine the wall time says more about the neighbours than about us), best and median. One more run of each
lists what it imported (``sys.modules`` after the command): all modules, vidaudit's, the suite packages, and
whether scipy came in; the floor is a bare interpreter (``python -c pass``). A one-video counting dataset is
generated first (by this checkout) for the commands that read one.

    python benchmarks/startup.py [--before 3e94b6f] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEFORE = "3e94b6f"
RUN_CLI = "import sys; sys.argv[0] = 'vidaudit'; from vidaudit.cli import app; app()"
#: the same, then the modules it imported into the file argv[1]
LIST_MODULES = """
import json, sys
out = sys.argv.pop(1)
sys.argv[0] = "vidaudit"
from vidaudit.cli import app
try:
    app()
except SystemExit:
    pass
with open(out, "w", encoding="utf-8") as f:
    json.dump(sorted(sys.modules), f)
"""


def child_cpu(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """User + system CPU seconds of one child process (its exit code must be 0)."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.decode(errors='replace')[-3000:]}")
    return usage.ru_utime + usage.ru_stime


def imported(args: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    """What one run of ``vidaudit ARGS`` imported."""
    with tempfile.NamedTemporaryFile(suffix=".json", dir=cwd, delete=False) as f:
        path = Path(f.name)
    subprocess.run(
        [sys.executable, "-c", LIST_MODULES, str(path), *args], env=env, cwd=cwd, check=True, capture_output=True
    )
    modules = json.loads(path.read_text(encoding="utf-8"))
    path.unlink()
    suites = sorted({m.split(".")[2] for m in modules if m.startswith("vidaudit.suites.")} - {"base"})
    return {
        "all": len(modules),
        "vidaudit": sum(m == "vidaudit" or m.startswith("vidaudit.") for m in modules),
        "suites": ",".join(suites) or "-",
        "scipy": "scipy" in modules,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--before", default=BEFORE, help="the git revision to compare with")
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "src"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}; before {a.before}, after {rev}"
        f"{' + uncommitted changes' if dirty else ''}; load average at start "
        + " / ".join(f"{x:.1f}" for x in os.getloadavg())
    )
    with tempfile.TemporaryDirectory(prefix="vidaudit-startup-") as tmp:
        root = Path(tmp)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", a.before, "src"], capture_output=True, check=True)
        (root / "before").mkdir()
        subprocess.run(["tar", "-x", "-C", str(root / "before")], input=archive.stdout, check=True)
        envs = {
            f"before ({a.before})": {**os.environ, "PYTHONPATH": str(root / "before" / "src")},
            "after": {**os.environ, "PYTHONPATH": str(REPO / "src")},
        }
        data = root / "data"
        subprocess.run(
            [
                sys.executable,
                "-c",
                RUN_CLI,
                "generate",
                "counting",
                "--out",
                str(data),
                "--domains",
                "blinking",
                "--counts",
                "2",
                "--frequencies",
                "1",
                "--seeds",
                "1",
                "--duration",
                "4",
                "--fps",
                "10",
                "--width",
                "320",
                "--height",
                "240",
                "--workers",
                "1",
            ],
            env=envs["after"],
            cwd=root,
            check=True,
            capture_output=True,
        )
        commands = {
            "vidaudit --help": ["--help"],
            "vidaudit generate counting --help": ["generate", "counting", "--help"],
            "vidaudit run counting --dry-run (1 video)": [
                "run",
                "counting",
                "--data",
                str(data),
                "--model",
                "oracle",
                "--condition",
                "frames@2",
                "--dry-run",
                "--out",
                str(root / "run"),
            ],
            "vidaudit verify DATA (1 counting video)": ["verify", str(data), "--workers", "1"],
        }
        cpu: dict[tuple[str, str], list[float]] = {(c, s): [] for c in commands for s in envs}
        bare: list[float] = []
        for _ in range(a.repeats):
            bare.append(child_cpu([sys.executable, "-c", "pass"], envs["after"], root))
            for c, args in commands.items():
                for s, env in envs.items():
                    cpu[c, s].append(child_cpu([sys.executable, "-c", RUN_CLI, *args], env, root))
        loads = os.getloadavg()
        print(f"CPU = user + system of the child, best / median of {a.repeats}, the trees alternating\n")
        print(
            f"{'command':44s} {'tree':18s} {'CPU best':>9s} {'median':>8s} {'ratio':>6s} {'modules':>8s} "
            f"{'vidaudit':>8s}  {'scipy':5s} suites imported"
        )
        for c, args in commands.items():
            base = min(cpu[c, next(iter(envs))])
            for s, env in envs.items():
                got = imported(args, env, root)
                best, med = min(cpu[c, s]), statistics.median(cpu[c, s])
                print(
                    f"{c:44s} {s:18s} {best:8.2f}s {med:7.2f}s {base / best:5.1f}x {got['all']:8d} "
                    f"{got['vidaudit']:8d}  {'yes' if got['scipy'] else 'no':5s} {got['suites']}"
                )
        print(f"{'floor: python -c pass':44s} {'':18s} {min(bare):8.2f}s {statistics.median(bare):7.2f}s")
        print(
            "\nload average at the end "
            + " / ".join(f"{x:.1f}" for x in loads)
            + f"; ratio: before's best CPU / this tree's ({time.strftime('%Y-%m-%d')})"
        )


if __name__ == "__main__":
    main()
