"""The interop commands on a Typer app (`register(app)`), and the one-line message of a missing extra."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from test_interop_support import canned_answer, run_py, small_dataset
from vidaudit.core.manifest import load_samples
from vidaudit.tools.interop.cli import register

runner = CliRunner()
_WITHOUT = (
    "import sys; sys.modules[{mod!r}] = None\n"
    "from vidaudit.cli import app\nfrom vidaudit.tools.interop.cli import register\nregister(app)\n"
    "app({args!r})"
)


@pytest.fixture(scope="module")
def small(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_dataset(smoke_dir, tmp_path_factory.mktemp("cli") / "data")


@pytest.fixture()
def app() -> typer.Typer:
    """A fresh app with a stand-in score-responses, which register() must replace."""
    a = typer.Typer()

    @a.command("score-responses")
    def old() -> None:
        raise AssertionError("the old score-responses was not replaced")

    @a.command("suites")
    def suites() -> None:
        typer.echo("kept")

    register(a)
    return a


def test_export_commands(app: typer.Typer, small: Path, tmp_path: Path) -> None:
    pytest.importorskip("datasets", reason="the interop extra is not installed")
    r = runner.invoke(app, ["export", "hf", str(small), "--out", str(tmp_path / "hf")])
    assert r.exit_code == 0, r.output
    assert "exported 5 samples" in r.output and (tmp_path / "hf" / "README.md").is_file()
    r = runner.invoke(app, ["export", "lmms-eval", str(small), "--out", str(tmp_path / "task"), "--prompt", "direct"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "task" / "vidaudit_counting_direct.yaml").is_file()
    assert "--include_path" in r.output
    r = runner.invoke(app, ["export", "lmms-eval", str(small), "--out", str(tmp_path / "t2"), "--prompt", "nope"])
    assert r.exit_code == 2 and "unknown prompt 'nope'" in r.output
    assert runner.invoke(app, ["suites"]).output == "kept\n"


def test_score_responses_from_a_log_and_from_a_file(app: typer.Typer, small: Path, tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas", reason="the interop extra is not installed")
    samples = load_samples(small)
    log = tmp_path / "M" / "M_vidaudit_counting.tsv"
    log.parent.mkdir()
    pd.DataFrame([{"index": s.sample_id, "prediction": canned_answer(s)} for s in samples]).to_csv(
        log, sep="\t", index=False
    )
    r = runner.invoke(
        app,
        [
            "score-responses",
            "--from",
            "vlmevalkit",
            str(log),
            "--samples",
            str(small),
            "--out",
            str(tmp_path / "a.jsonl"),
            "--report",
            str(tmp_path / "rep"),
        ],
    )
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(lines) == 5 and {x["model"] for x in lines} == {"M"}
    assert (tmp_path / "rep" / "report.html").is_file()
    # the plain --responses path still works, its suite taken from the manifest
    resp = tmp_path / "responses.jsonl"
    resp.write_text(
        "".join(
            json.dumps(
                {
                    "sample_id": s.sample_id,
                    "response": canned_answer(s),
                    "model": "M",
                    "condition": "vlmevalkit:vidaudit_counting",
                }
            )
            + "\n"
            for s in samples
        )
    )
    r = runner.invoke(
        app, ["score-responses", "--responses", str(resp), "--samples", str(small), "--out", str(tmp_path / "b.jsonl")]
    )
    assert r.exit_code == 0, r.output
    assert (tmp_path / "a.jsonl").read_text() == (tmp_path / "b.jsonl").read_text()
    for args in ([], ["--responses", str(resp), "--from", "vlmevalkit", str(log)]):
        r = runner.invoke(app, ["score-responses", "--samples", str(small), "--out", str(tmp_path / "c.jsonl"), *args])
        assert r.exit_code == 2 and "either --responses FILE or --from HARNESS LOG" in r.output
    r = runner.invoke(
        app,
        ["score-responses", "--from", "lm-eval", str(log), "--samples", str(small), "--out", str(tmp_path / "c.jsonl")],
    )
    assert r.exit_code == 2 and "choose one of lmms-eval, vlmevalkit, inspect" in r.output
    r = runner.invoke(
        app,
        [
            "score-responses",
            "--suite",
            "toy",
            "--from",
            "vlmevalkit",
            str(log),
            "--samples",
            str(small),
            "--out",
            str(tmp_path / "c.jsonl"),
        ],
    )
    assert r.exit_code == 2 and "does not match the manifest" in r.output
    assert not (tmp_path / "c.jsonl").exists()


@pytest.mark.parametrize(
    "module,args",
    [
        ("datasets", ["export", "hf", "{data}", "--out", "{tmp}/hf"]),
        (
            "inspect_ai",
            ["score-responses", "--from", "inspect", "{tmp}/x.eval", "--samples", "{data}", "--out", "{tmp}/s.jsonl"],
        ),
        (
            "pandas",
            [
                "score-responses",
                "--from",
                "vlmevalkit",
                "{tmp}/M_x.tsv",
                "--samples",
                "{data}",
                "--out",
                "{tmp}/s.jsonl",
            ],
        ),
    ],
)
def test_missing_extra_is_one_line(module: str, args: list[str], small: Path, tmp_path: Path) -> None:
    (tmp_path / "x.eval").write_bytes(b"")
    (tmp_path / "M_x.tsv").write_text("index\tprediction\n")
    argv = [a.format(data=small, tmp=tmp_path) for a in args]
    r = run_py(_WITHOUT.format(mod=module, args=argv), timeout=120)
    out = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 2, out
    assert 'pip install "vidaudit[interop]"' in out and "Traceback" not in out, out
    assert not (tmp_path / "hf").exists() and not (tmp_path / "s.jsonl").exists()


def test_the_inspect_tasks_without_inspect_ai() -> None:
    r = run_py(
        "import sys; sys.modules['inspect_ai'] = None\nimport vidaudit.tools.interop.inspect_ai_tasks", timeout=60
    )
    assert r.returncode == 1 and 'pip install "vidaudit[interop]"' in r.stderr, r.stderr
    assert (
        r.stderr.strip()
        .splitlines()[-1]
        .startswith(
            "vidaudit.core.registry.MissingExtraError: the vidaudit inspect_ai tasks needs an optional dependency"
        )
    )
