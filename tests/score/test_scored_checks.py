"""Every reader of a derived file checks it (issue 36, items 3, 4 and 8): ``report`` and ``compare`` refuse a
scored file that was edited, cut short or is older than its run, naming the fix (``vidaudit score RUN``).

A real counting smoke audit (oracle and chance, a real store; its data the session's smoke set) is made once; each
test copies it, damages ``scored_run.jsonl`` the way a hand edit or a partial copy would, and runs ``vidaudit
report`` and ``vidaudit compare`` through the CLI. The ``--retry-errors`` scenario runs a real audit against a local
OpenAI-compatible server that fails every call, retries the errors with the server answering "3", and checks that
``compare`` shows what the manifest's answers say (the samples whose answer is 3), not the stale figure. A full disk
while ``score`` writes is a real tmpfs filled to the brim (skipped where mounting is not allowed).
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditseed import seed_counting_smoke
from httpfake import FakeServer, Recorded, Reply
from vidaudit.cli import app
from vidaudit.core.errors import DataError
from vidaudit.score.scored_run import SCORED_RUN, read_checked

SRC = Path(__file__).resolve().parents[2] / "src"
runner = CliRunner()


def _cli(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args), env={"COLUMNS": "300"})
    return r.exit_code, r.output + (
        ""
        if r.exception is None or isinstance(r.exception, SystemExit)
        else f"\n{type(r.exception).__name__}: {r.exception}"
    )


def _proc(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "300", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env=full,
        cwd=cwd,
    )


@pytest.fixture(scope="module")
def audited(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The counting smoke audit of oracle and chance, on the session's smoke set (tests/auditseed.py: reused by its
    content key, not rendered again)."""
    out = tmp_path_factory.mktemp("checks") / "A"
    seed_counting_smoke(out / "data", smoke_dir)
    r = _proc(
        "audit",
        "--model",
        "oracle",
        "--model",
        "chance",
        "--suite",
        "counting",
        "--budget",
        "smoke",
        "--out",
        str(out),
        "--workers",
        "2",
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return out


@pytest.fixture
def audit(audited: Path, tmp_path: Path) -> Path:
    """A copy of the audit (its data inside it) that a test may damage."""
    out = tmp_path / "A"
    shutil.copytree(audited, out, symlinks=True, ignore=shutil.ignore_patterns(".lock"))
    return out


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")


def _edit_trials(path: Path, edit: Callable[[dict], dict | None], *, count: bool = False) -> None:
    """Apply ``edit`` to each trial line (None drops it); ``count``: also set the header's n_trials to match."""
    head, *rest = _lines(path)
    kept = []
    for line in rest:
        got = edit(json.loads(line))
        if got is not None:
            kept.append(json.dumps(got, separators=(",", ":")))
    header = json.loads(head)
    if count:
        header["n_trials"] = len(kept)
    _write(path, [json.dumps(header, separators=(",", ":"))] + kept)


def _flip_first_correct(t: dict, done: list[bool] = []) -> dict:  # noqa: B006 - a flag shared by one edit
    if not done and t["record"]["correct"] is False:
        t["record"]["correct"] = True
        done.append(True)
    return t


def _relabel(t: dict) -> dict:
    if t["record"]["model"] == "chance":
        t["record"]["model"] = "gpt-4o"
    return t


DAMAGE: dict[str, Callable[[Path], None]] = {
    # one wrong answer of chance made right: chance's accuracy would read 3/18 instead of 2/18
    "an edited correct": lambda p: _edit_trials(p, lambda t, d=[]: _flip_first_correct(t, d)),
    # chance's trials shown under another model's name
    "a relabelled model": lambda p: _edit_trials(p, _relabel),
    # chance's trials dropped and the header's count edited to match
    "trials removed, count edited": lambda p: _edit_trials(
        p, lambda t: None if t["record"]["model"] == "chance" else t, count=True
    ),
    # every trial dropped, the header saying 0
    "a header-only file": lambda p: _edit_trials(p, lambda t: None, count=True),
    # the last trial lost (a partial copy), the header untouched
    "a truncated file": lambda p: _write(p, _lines(p)[:-1]),
    # a file written by the vidaudit before checksums (version 1, no sha256)
    "an old version-1 file": lambda p: _write(
        p,
        [json.dumps({k: v for k, v in json.loads(_lines(p)[0]).items() if k != "sha256"} | {"version": 1})]
        + _lines(p)[1:],
    ),
}
WHY = {
    "an edited correct": "does not match its checksum",
    "a relabelled model": "does not match its checksum",
    "trials removed, count edited": "does not match its checksum",
    "a header-only file": "does not match its checksum",
    "a truncated file": "truncated",
    "an old version-1 file": "version 1",
}


def _refused(code: int, output: str, why: str, run: Path) -> None:
    assert code == 2, output
    assert "Traceback" not in output and why in output, output
    assert f"vidaudit score {run}" in " ".join(output.split()), output


def _counting_entries(out: Path) -> dict[str, tuple[int, int]]:
    code, output = _cli("compare", str(out), "--out", str(out.parent / "cmp.json"))
    assert code == 0, output
    res = json.loads((out.parent / "cmp.json").read_text())
    block = next(b for b in res["parts"] if b["part"] == "counting")
    return {e["model"]: (e["k"], e["n"]) for e in block["entries"]}


@pytest.mark.timeout(900)
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_report_and_compare_refuse_a_damaged_scored_file(audit: Path, damage: str) -> None:
    run = audit / "runs" / "counting"
    truth = _counting_entries(audit)
    assert truth == {"oracle": (18, 18), "chance": (truth["chance"][0], 18)}
    DAMAGE[damage](run / SCORED_RUN)
    _refused(*_cli("report", str(run)), WHY[damage], run)
    _refused(*_cli("compare", str(audit)), WHY[damage], run)
    with pytest.raises(DataError, match=WHY[damage]):
        read_checked(run)
    code, output = _cli("score", str(run))  # the fix the message names
    assert code == 0, output
    assert _cli("report", str(run))[0] == 0
    assert _counting_entries(audit) == truth


@pytest.mark.timeout(900)
def test_a_stale_scored_file_is_refused_by_report_and_compare(audit: Path) -> None:
    run = audit / "runs" / "counting"
    (run / "human_records.jsonl").write_text("")  # a study imported after scoring: the file no longer says all
    _refused(*_cli("report", str(run)), "human_records.jsonl changed", run)
    _refused(*_cli("compare", str(audit)), "human_records.jsonl changed", run)
    (run / "human_records.jsonl").unlink()
    assert _counting_entries(audit)["oracle"] == (18, 18)


def _completion(text: str) -> dict:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105},
    }


@pytest.mark.timeout(900)
def test_compare_after_retry_errors_shows_the_true_figure(smoke_dir: Path, tmp_path: Path) -> None:
    """The run's own advice (``--retry-errors``) changes the store after the audit scored it: compare refuses the
    stale file with the fix, and once re-scored shows what the answers are worth (read from the manifest). The
    audit's data is the session's smoke set (tests/auditseed.py)."""
    answering = {"on": False}

    def reply(rec: Recorded) -> Reply:
        return Reply(json=_completion("3")) if answering["on"] else Reply(status=400, json={"error": {"message": "no"}})

    out = tmp_path / "A"
    seed_counting_smoke(out / "data", smoke_dir)
    env = {"OPENAI_API_KEY": "sk-test"}
    with FakeServer() as srv:
        srv.script("POST", "/v1/chat/completions", default=reply)
        spec = f"openai:m@{srv.url}/v1"
        r = _proc(
            "audit",
            "--model",
            "oracle",
            "--model",
            spec,
            "--suite",
            "counting",
            "--budget",
            "smoke",
            "--out",
            str(out),
            env=env,
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert _counting_entries(out)[spec] == (0, 18)  # every call failed: wrong, and counted
        answering["on"] = True
        run = out / "runs" / "counting"
        r = _proc("run", "--resume", str(run), "--retry-errors", env=env)
        assert r.returncode == 0, r.stdout + r.stderr
    _refused(*_cli("compare", str(out)), "older than the run", run)
    assert _cli("score", str(run))[0] == 0
    manifest = next((out / "data").glob("counting-*/manifest.jsonl"))
    threes = sum(1 for line in _lines(manifest) if json.loads(line)["answer"] == 3)
    assert threes > 0
    assert _counting_entries(out) == {"oracle": (18, 18), spec: (threes, 18)}
    res = json.loads((out.parent / "cmp.json").read_text())
    pair = next(p for p in res["parts"][0]["paired"])
    assert pair["n_pairs"] == 18 and pair["estimate"] == pytest.approx(threes / 18 - 1.0)
    # the profile's figures were read before the rerun: left out, and said so
    assert all(e["figures"] == [] for e in res["parts"][0]["entries"])
    assert "older than the run's scores" in " ".join(res["parts"][0]["notes"])


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A real 2 MiB tmpfs (root only; skipped where the container may not mount)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True, check=False)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode(errors='replace').strip()})")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.timeout(900)
def test_a_full_disk_while_scoring_is_one_line_and_leaves_the_old_files(audited: Path, tiny_disk: Path) -> None:
    run = tiny_disk / "run"
    shutil.copytree(audited / "runs" / "counting", run, ignore=shutil.ignore_patterns(".lock", "report"))
    old = {name: (run / name).read_bytes() for name in (SCORED_RUN, "scores.jsonl")}
    filler = tiny_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:  # fill the disk to the last byte
        for block in (4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * block)
            except OSError as e:
                assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    code, output = _cli("score", str(run))
    assert code == 2, output
    assert "Traceback" not in output and "No space left on device" in output and "vidaudit score" in output, output
    assert {name: (run / name).read_bytes() for name in old} == old  # the old pair, whole
    assert not [p for p in run.iterdir() if p.name.startswith(".") and p.name != ".lock"]  # no temporary left
    filler.unlink()
    code, output = _cli("score", str(run))
    assert code == 0, output
