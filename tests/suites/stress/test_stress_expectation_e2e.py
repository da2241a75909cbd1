"""The expectation probe end to end through the CLI: generate -> run (oracle, chance, a constant) with a judge
that is a real local HTTP server speaking the OpenAI API -> score -> report; the same without a judge
(every free-text trial "not judged", never scored); and judge-agreement between two judges and against
human labels, with kappa recomputed here from the records."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from clirun import invoke
from httpfake import FakeServer, Recorded, Reply
from vidaudit.core.contract.records import ScoreRecord
from vidaudit.core.contract.report import Report

CHAT = "/v1/chat/completions"
CONSTANT = "constant:Yes, something in this video looks odd."
MODELS = ("oracle", "chance", CONSTANT)


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``vidaudit ARGS`` in ``root`` with the judge's key, through the CLI's entry point in this process
    (tests/clirun.py)."""
    return invoke(*args, cwd=root, env={"OPENAI_API_KEY": "sk-test-judge"})


def _proc(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The same as a real process (a refusal's exit code)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-judge"}
    return subprocess.run(
        [sys.executable, "-m", "vidaudit.cli", *args], cwd=root, capture_output=True, text=True, timeout=600, env=env
    )


def completion(text: str) -> dict:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "judge",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 200, "completion_tokens": 20, "total_tokens": 220},
    }


def _prompt(rec: Recorded) -> str:
    content = rec.json()["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _between(text: str, start: str, end: str = "\n") -> str:
    i = text.index(start) + len(start)
    return text[i : text.index(end, i)]


def make_judge(lenient: bool, failures: list[int]):
    """A rule-based judge. A (lenient=False): the hallucination rule is "names the missing action", the order rule
    "contains the shown order", the anomaly score 1.0 when the answer holds the descriptor; prose for the omelette's
    noise item; the first call fails with a 500. B (lenient=True): the same, but 0.5 for an anomaly answer that
    says yes without the descriptor, and never prose or a failure."""

    def reply(rec: Recorded) -> Reply:
        text = _prompt(rec)
        if not lenient and not failures:
            failures.append(1)
            return Reply(status=500, json={"error": {"message": "judge overloaded"}})
        if "hallucinates actions for a CUT video" in text:
            missing = _between(text, "2. The missing action deliberately removed: ")
            summary = _between(text, "3. The model’s generated summary: ", "\nTask:")
            verdict = {"hallucinated_summary": missing in summary, "explanation": "rule"}
        elif "in the order the video actually shows them" in text:
            shown = _between(text, "the video shows these steps, in this order: ", ".\n")
            answer = _between(text, "<<<\n", "\n>>>")
            verdict = {"describes_shown_order": shown in answer, "explanation": "rule"}
        else:
            desc = _between(text, "Ground-truth anomaly descriptor: ")
            answer = _between(text, "<<<\n", "\n>>>")
            if not lenient and desc.startswith("noise injection") and "crack the eggs" in text:
                return Reply(json=completion("The model seems to have noticed something; hard to say."))
            score = 1.0 if desc in answer else (0.5 if lenient and "yes" in answer.lower() else 0.0)
            verdict = {"score": score, "explanation": "rule"}
        return Reply(json=completion("```json\n" + json.dumps(verdict) + "\n```"))

    return reply


def _records(run: Path) -> list[ScoreRecord]:
    return [ScoreRecord.model_validate_json(x) for x in (run / "scores.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("expectation_e2e")
    r = _cli(root, "generate", "stress", "--probe", "expectation", "--out", str(root / "data"))
    assert r.returncode == 0, r.stdout + r.stderr
    models = [a for m in MODELS for a in ("--model", m)]
    with FakeServer() as a, FakeServer() as b:
        a.script("POST", CHAT, default=make_judge(False, []))
        b.script("POST", CHAT, default=make_judge(True, [1]))
        for name, srv in (("run_a", a), ("run_b", b)):
            r = _cli(
                root,
                "run",
                "stress",
                "--data",
                str(root / "data"),
                *models,
                "--condition",
                "frames#2",
                "--judge",
                f"openai:judge-{name}@{srv.url}/v1",
                "--out",
                str(root / name),
            )
            assert r.returncode == 0, r.stdout + r.stderr
            r = _cli(root, "report", str(root / name))
            assert r.returncode == 0, r.stdout + r.stderr
        calls = {"a": len(a.requests_to(CHAT)), "b": len(b.requests_to(CHAT))}
    r = _cli(
        root,
        "run",
        "stress",
        "--data",
        str(root / "data"),
        *models,
        "--condition",
        "frames#2",
        "--out",
        str(root / "plain"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    r = _cli(root, "report", str(root / "plain"))
    assert r.returncode == 0, r.stdout + r.stderr
    return root, calls


def test_judged_run_scores_from_verdicts(runs) -> None:
    root, calls = runs
    recs = _records(root / "run_a")
    assert len(recs) == 26 * 3 and all(r.status == "ok" for r in recs)
    # 20 free-text samples per model are judged (the oracle's included; a judge prompt met twice is a stored call);
    # the first judge call failed (HTTP 500) and the trial's retry judged it
    judged = [r for r in recs if r.params["task"] in ("describe", "gap_summary", "anomaly")]
    assert len(judged) == 60 and 50 < calls["a"] <= 61 and calls["b"] <= 60
    assert "judge overloaded" in (root / "run_a" / "attempts.jsonl").read_text()
    oracle = [r for r in recs if r.model == "oracle"]
    methods = Counter(r.parse.method for r in oracle if r.parse)
    assert methods["judged"] == 19 and methods["judge_unparseable"] == 1
    # the unparseable verdict is wrong and counted; everything else of the oracle passes the judge
    assert [r.sample_id for r in oracle if r.correct is not True] == ["stress-expectation-omelette-s0-anomaly-noise"]
    unparseable = [r for r in recs if r.metrics.get("judge") == "unparseable"]
    # (the prose item names the omelette's steps: the oracle's and chance's answers, not the constant's)
    assert sorted(r.model for r in unparseable) == ["chance", "oracle"] and all(r.correct is False for r in unparseable)
    const = [r for r in recs if r.model.startswith("constant") and r.params["task"] == "anomaly"]
    assert all(r.metrics["layout_ok"] is False and r.correct is False for r in const if r.metrics.get("judge") == "ok")


def test_judged_report_shows_spatial_temporal_overall(runs) -> None:
    root, _ = runs
    rep = Report.model_validate_json((root / "run_a" / "report" / "report.json").read_text())
    res = rep.results["expectation"]
    oracle = next(c for k, c in res["cells"].items() if k.startswith("oracle|"))
    sp, tp = oracle["anomaly"]["spatial"], oracle["anomaly"]["temporal"]
    assert (sp["n_correct"], sp["n_judgeable"], sp["unparseable"]) == (5, 6, 1)
    assert (tp["n_correct"], tp["n_judgeable"]) == (8, 8)
    assert abs(oracle["anomaly"]["overall"] - (5 / 6 + 1.0) / 2) < 1e-12
    assert oracle["gap"]["summary"]["accuracy"] == 1.0 and oracle["gap"]["mcq"]["accuracy"] == 1.0
    assert oracle["reversed"]["describe"]["all"]["accuracy"] == 1.0
    tables = {t.id: t for s in rep.sections for t in s.tables}
    an = tables["stress-expectation-anomaly"]
    assert an.columns[2:5] == ["spatial", "temporal", "overall"]
    row = next(r for r in an.rows if r[0] == "oracle")
    assert row[2:5] == ["83.3 (5/6)", "100.0 (8/8)", "91.7"] and "1 unparseable" in row[5]
    assert row[-1] == "not measured" and "humans" in row[-2]
    gap = tables["stress-expectation-gap"]
    assert any(r[2].startswith("MCQ") and r[6] == "25.0" for r in gap.rows)


def test_without_a_judge_free_text_is_not_judged(runs) -> None:
    root, _ = runs
    recs = _records(root / "plain")
    free = [r for r in recs if r.params["task"] in ("describe", "gap_summary", "anomaly")]
    assert free and all(r.correct is None and r.parse.method == "not_judged" for r in free)
    mcq = [r for r in recs if r.model == "oracle" and r.params["task"] in ("direction", "gap_mcq")]
    assert len(mcq) == 6 and all(r.correct for r in mcq)
    rep = Report.model_validate_json((root / "plain" / "report" / "report.json").read_text())
    row = next(
        r for t in rep.sections[0].tables if t.id == "stress-expectation-anomaly" for r in t.rows if r[0] == "oracle"
    )
    assert row[2:5] == ["not judged (6)", "not judged (8)", "-"]
    assert any("not judged" in n for n in rep.notes)


def _kappa(pairs: list[tuple[str, str]]) -> float:
    n = len(pairs)
    po = sum(a == b for a, b in pairs) / n
    ca, cb = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    pe = sum(ca[k] * cb[k] for k in ca) / n / n
    return (po - pe) / (1 - pe)


def _labels(run: Path) -> dict[tuple[str, str, str], tuple[str, str | None]]:
    out = {}
    for r in _records(run):
        if r.parse and r.parse.method in ("judged", "judge_unparseable"):
            out[(r.sample_id, r.model, r.condition)] = (
                r.parse.value if r.parse.method == "judged" else "unparseable",
                r.params["task"],
            )
    return out


def test_judge_agreement_between_two_runs(runs) -> None:
    root, _ = runs
    r = _cli(
        root,
        "judge-agreement",
        str(root / "run_a"),
        str(root / "run_b"),
        "--by",
        "task",
        "--out",
        str(root / "agree.json"),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Cohen's kappa" in r.stdout + r.stderr
    res = json.loads((root / "agree.json").read_text())
    la, lb = _labels(root / "run_a"), _labels(root / "run_b")
    items = {tuple(x["item"].split("|")): (x["a"], x["b"]) for x in res["items"]}
    # the oracle's and the constant's answers are the same in both runs; chance's depend on the trial id (of which
    # the judge is part), so its free text differs and those pairs are left out
    kept = {k for k in la if k[1] != "chance"}
    assert kept <= set(items) and res["answers_differ"] >= 1
    assert res["matched"] == len(items) and res["answers_differ"] + res["matched"] == len(set(la) & set(lb))
    assert all(items[k] == (la[k][0], lb[k][0]) for k in items)
    assert abs(res["overall"]["kappa"] - _kappa(list(items.values()))) < 1e-12
    an = res["groups"]["anomaly"]
    # the constant says "yes" without the descriptor: 0.0 from A, 0.5 from B; the oracle's prose item: unparseable vs 1.0
    assert an["confusion"]["0.0"]["0.5"] >= 14 and an["confusion"]["unparseable"]["1.0"] == 1
    assert an["kappa"] is not None and an["kappa"] < 0.5


def test_judge_agreement_with_human_labels(runs, tmp_path: Path) -> None:
    root, _ = runs
    la = _labels(root / "run_a")
    keys = [k for k in la if la[k][1] in ("gap_summary", "describe") and k[1] != "chance"]
    human = {"|".join(k): la[k][0] for k in keys}
    flip = sorted(human)[:2]
    for item in flip:
        human[item] = "false" if human[item] == "true" else "true"
    labels = tmp_path / "human.json"
    labels.write_text(json.dumps({"labels": human}))
    r = _cli(root, "judge-agreement", str(root / "run_a"), str(labels), "--out", str(tmp_path / "h.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads((tmp_path / "h.json").read_text())
    pairs = [(la[k][0], human["|".join(k)]) for k in keys]
    assert res["matched"] == len(keys) and res["only_in_b"] == 0
    assert abs(res["overall"]["kappa"] - _kappa(pairs)) < 1e-12
    assert (
        sum(
            res["overall"]["confusion"][a][b]
            for a in res["overall"]["labels"]
            for b in res["overall"]["labels"]
            if a != b
        )
        == 2
    )
    # a CSV with the same labels gives the same kappa (called in-process from here on)
    from vidaudit.score.agreement import judge_agreement

    csv_path = tmp_path / "human.csv"
    with csv_path.open("w", newline="") as f:  # (the constant's label holds a comma: quoted)
        w = csv.writer(f)
        w.writerow(["item", "label"])
        w.writerows(human.items())
    assert judge_agreement(root / "run_a", csv_path)["overall"] == res["overall"]


def test_judge_agreement_refuses_bad_labels(runs, tmp_path: Path) -> None:
    from vidaudit.core.errors import DataError
    from vidaudit.score.agreement import judge_agreement

    root, _ = runs
    la = _labels(root / "run_a")
    path = tmp_path / "labels.json"
    path.write_text(json.dumps({"no-such-sample": "true"}))
    r = _proc(root, "judge-agreement", str(root / "run_a"), str(path), "--out", str(tmp_path / "x.json"))
    assert r.returncode != 0 and "no trial is labelled by both" in r.stdout + r.stderr
    assert not (tmp_path / "x.json").exists()
    path.write_text(json.dumps({"|".join(k): 7 for k in la if la[k][1] == "gap_summary"}))
    with pytest.raises(DataError, match="share no label"):
        judge_agreement(root / "run_a", path)
    path.write_text(json.dumps({k[0]: "true" for k in la if k[1] == "oracle" and la[k][1] == "gap_summary"}))
    with pytest.raises(DataError, match=r"SAMPLE_ID\|MODEL\|CONDITION"):
        judge_agreement(root / "run_a", path)  # a bare sample id judged for three models is ambiguous
    with pytest.raises(DataError, match="must be a run directory"):
        judge_agreement(path, root / "run_a")
