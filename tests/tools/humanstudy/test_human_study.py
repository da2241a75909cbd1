"""The human-study tool without a browser: selection, prompt splitting, the data-quality kind, free-text answers,
and every refusal of a bad answers file (named, with nothing written)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples, write_manifest
from vidaudit.tools.humanstudy.answers import AnswerSheet, StudyManifest
from vidaudit.tools.humanstudy.export import export_study
from vidaudit.tools.humanstudy.importing import import_answers
from vidaudit.tools.humanstudy.items import StudyItem, performance_item, split_options
from vidaudit.tools.humanstudy.scoring import score_sheets
from vidaudit.tools.humanstudy.select import select, stratum, units_of


def _cli(*args: object) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


def oracle_run(root: Path, probe: str, condition: str, *generate_args: object) -> Path:
    """A real stress dataset of ``probe`` under ``root/data`` and an oracle run of it in ``root/run``."""
    _cli("generate", "stress", "--probe", probe, "--out", root / "data", *generate_args)
    _cli("run", "stress", "--data", root / "data", "--model", "oracle", "--condition", condition, "--out", root / "run")
    return root / "run"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return oracle_run(tmp_path_factory.mktemp("human_study_cli"), "camera_motion", "frames@4")


# --------------------------------------------------------------------------- selection


def _item(i: int, probe: str, condition: str, pair: str | None = None, phase: int | None = None) -> StudyItem:
    return StudyItem(
        item_id=f"i{i}",
        sample_id=f"s{i}",
        kind="choice",
        probe=probe,
        condition=condition,
        question="q",
        options=[("A", "a"), ("B", "b")],
        video_path=f"v{i}.mp4",
        pair=pair,
        phase=phase,
    )


@st.composite
def _pool(draw) -> list[StudyItem]:
    n = draw(st.integers(1, 30))
    out, i = [], 0
    for _ in range(n):
        probe, cond = draw(st.sampled_from("pq")), draw(st.sampled_from(["x", "y", "z"]))
        if draw(st.booleans()):
            out += [_item(i, probe, "masked", f"pair{i}", 2), _item(i + 1, probe, "raw", f"pair{i}", 1)][::-1]
            i += 2
        else:
            out.append(_item(i, probe, cond))
            i += 1
    return draw(st.permutations(out))


@settings(max_examples=80, deadline=None)
@given(_pool(), st.integers(1, 40), st.integers(0, 3))
def test_selection_is_stratified_seeded_and_keeps_pairs(pool: list[StudyItem], k: int, seed: int) -> None:
    chosen = select(pool, k, seed)
    assert chosen == select(pool, k, seed)  # seeded: the same every time
    units = units_of(chosen)
    assert len(units) == min(k, len(units_of(pool)))
    for u in units:  # pairs whole, masked first
        if u[0].pair is not None:
            assert [i.phase for i in u] == [1, 2]
            j = chosen.index(u[0])
            assert chosen[j + 1] is u[1]
    avail: dict = {}
    for u in units_of(pool):
        avail[stratum(u)] = avail.get(stratum(u), 0) + 1
    got: dict = {}
    for u in units:
        got[stratum(u)] = got.get(stratum(u), 0) + 1
    # equal allocation: no stratum has more than one unit over a stratum that still had units left
    left = [got.get(s, 0) for s in avail if got.get(s, 0) < avail[s]]
    if left:
        assert all(got.get(s, 0) <= min(left) + 1 for s in avail), (got, avail)


def test_a_pair_needs_both_phases() -> None:
    with pytest.raises(ConfigError, match="pair 'p'"):
        select([_item(0, "p", "masked", "p", 1)], None, 0)


@given(st.text(max_size=300))
def test_split_options_never_raises(text: str) -> None:
    question, options = split_options(text)
    assert isinstance(question, str)
    assert [k for k, _ in options] == [chr(65 + i) for i in range(len(options))]
    assert len(options) != 1


def test_split_options_reads_lettered_lines() -> None:
    q, opts = split_options("Which?\nA. left\nB. right\nAnswer inside \\boxed{}, e.g. \\boxed{A}.")
    assert q == "Which?" and opts == [("A", "left"), ("B", "right")]
    assert split_options("How many?\nB. not from A")[1] == []  # options must start at A


# --------------------------------------------------------------------------- free text (a plugin suite's own task)


def test_free_text_is_scored_by_the_suite_or_counted_not_judged(tmp_path: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parents[2] / "plugin_site"))
    try:
        from toysuite import SUITE, generate_toy
    finally:
        sys.path.pop(0)
    generate_toy(tmp_path, seeds=1)
    samples = {s.sample_id: s for s in load_samples(tmp_path)}
    s = samples["toy-red-0"]
    prompt = SUITE.render_prompt(s, None)
    item = performance_item(s, prompt.system, prompt.text)
    assert item.kind == "text" and item.options == [] and item.question == prompt.text
    man = StudyManifest(
        path=tmp_path / "m.json", study="hs-x", kind="performance", suite="toy", items={item.item_id: item}, raw={}
    )
    sheets = [
        AnswerSheet(tmp_path / "a.json", "ann", {item.item_id: "\\boxed{red}"}),
        AnswerSheet(tmp_path / "b.json", "bea", {item.item_id: "it is red"}),
    ]
    out = score_sheets(SUITE, man, sheets, samples, judge=None)
    assert [(r.model, r.model_role, r.correct) for r in out.records] == [("human:ann", "human", True)]
    assert out.not_judged == [("bea", item.item_id)]


# --------------------------------------------------------------------------- the data-quality kind


def test_quality_study(run_dir: Path, tmp_path: Path) -> None:
    data = Path(json.loads((run_dir / "run.json").read_text())["data_dir"])
    with pytest.raises(DataError, match="params.statement"):
        export_study(data, tmp_path / "q0.html", kind="quality")
    qdata = tmp_path / "qdata"
    qdata.mkdir()
    (qdata / "videos").symlink_to(data / "videos")
    # videos shared with another dataset through a symlink: the dataset says so (docs/running-models.md)
    (qdata / "dataset.json").write_text(
        json.dumps({**json.loads((data / "dataset.json").read_text()), "external_videos": True})
    )
    samples = load_samples(data)[:4]
    write_manifest(
        qdata,
        [
            s.model_copy(
                update={"params": {**s.params, "statement": f"The camera zooms ({i}).", "claim_is_true": i % 2 == 0}}
            )
            for i, s in enumerate(samples)
        ],
    )
    qrun = tmp_path / "qrun"
    _cli("run", "stress", "--data", qdata, "--model", "oracle", "--condition", "frames@4", "--out", qrun)
    res = export_study(qrun, tmp_path / "q.html", kind="quality")
    man = json.loads(res.manifest.read_text())
    html = res.page.read_text()
    assert "Does this statement describe something that does not occur in the video?" in html
    assert "The camera zooms (1)." in html and 'value="yes"' in html
    truth = {it["item_id"]: it["correct"] for it in man["items"]}
    assert sorted(truth.values()) == ["no", "no", "yes", "yes"]
    answers = {i: "yes" for i in truth}
    sheet = tmp_path / "ann.json"
    sheet.write_text(json.dumps({"annotator": "ann", "study": res.study, "answers": answers}))
    imp = import_answers([sheet], qrun)
    assert imp.summary["overall"]["n_correct"] == 2 and imp.summary["overall"]["n_answers"] == 4
    assert imp.summary["cells"][0]["condition"] == "quality"
    _cli("report", qrun)  # data-quality records stay out of the probes' aggregation
    report = json.loads((qrun / "report" / "report.json").read_text())
    camera = next(t for s in report["sections"] for t in s["tables"] if t["id"] == "stress-camera-accuracy")
    assert camera["rows"][0][-1] == "not measured"
    assert report["results"]["human_study"]["kind"] == "quality"


# --------------------------------------------------------------------------- refusals


def test_bad_answers_files_are_refused_and_nothing_is_written(run_dir: Path, tmp_path: Path) -> None:
    res = export_study(run_dir, tmp_path / "s.html", sample=3, seed=7)
    man = json.loads(res.manifest.read_text())
    ids = [it["item_id"] for it in man["items"]]

    def sheet(name: str, body: object) -> Path:
        p = tmp_path / name
        p.write_text(body if isinstance(body, str) else json.dumps(body))
        return p

    good = sheet("good.json", {"annotator": "a", "study": res.study, "answers": {ids[0]: "A"}})
    cases = [
        (
            sheet("other.json", {"annotator": "b", "study": "hs-ffffffffffffffff", "answers": {}}),
            "for study hs-ffffffffffffffff",
        ),
        (sheet("broken.json", '{"annotator": "b", "study"'), "not valid JSON"),
        (sheet("list.json", "[1, 2]"), "JSON object"),
        (sheet("unknown.json", {"annotator": "b", "study": res.study, "answers": {"izzz": "A"}}), "item 'izzz'"),
        (sheet("option.json", {"annotator": "b", "study": res.study, "answers": {ids[1]: "Q"}}), "not one of its"),
        (sheet("noname.json", {"annotator": " ", "study": res.study, "answers": {}}), "no annotator"),
        (sheet("dup.json", {"annotator": "a", "study": res.study, "answers": {}}), "both from annotator 'a'"),
    ]
    for bad, needle in cases:
        with pytest.raises(DataError) as e:
            import_answers([good, bad], run_dir, study=res.manifest)
        assert needle in str(e.value) and (bad.name in str(e.value) or needle.startswith("both")), str(e.value)
        assert not (run_dir / "human_records.jsonl").exists() and not (run_dir / "human_study.json").exists()
    # a hand-merged file answering one item twice (JSON keeps the last without a word); one annotator typed
    # composed and decomposed ('\u00e1' and 'a\u0301' are the same name on screen): each used to be accepted
    twice = sheet(
        "twice.json",
        '{"annotator": "b", "study": "%s", "answers": {"%s": "A", "%s": "B"}}' % (res.study, ids[1], ids[1]),
    )
    nfc = sheet("nfc.json", {"annotator": "\u00e1", "study": res.study, "answers": {ids[1]: "A"}})
    nfd = sheet("nfd.json", {"annotator": "a\u0301", "study": res.study, "answers": {ids[2]: "A"}})
    for files, needle in (
        (
            [good, twice],
            f'twice.json: the answers file: the key "{ids[1]}" appears twice in one object, with different values',
        ),
        ([nfc, nfd], "nfd.json and " + str(nfc) + " are both from annotator 'a\\u0301'"),
    ):
        with pytest.raises(DataError) as e:
            import_answers(files, run_dir, study=res.manifest)
        assert needle in str(e.value), str(e.value)
        assert not (run_dir / "human_records.jsonl").exists() and not (run_dir / "human_study.json").exists()
    # found through RUN/human_studies without --study; then another study over it needs --replace
    import_answers([good], run_dir)
    other = export_study(run_dir, tmp_path / "t.html", sample=2, seed=8)
    assert other.study != res.study
    sheet2 = sheet("t.json", {"annotator": "a", "study": other.study, "answers": {}})
    with pytest.raises(DataError, match="--replace"):
        import_answers([sheet2], run_dir)
    assert json.loads((run_dir / "human_study.json").read_text())["study"] == res.study
    import_answers([sheet2], run_dir, replace=True)
    assert json.loads((run_dir / "human_study.json").read_text())["study"] == other.study
    (run_dir / "human_records.jsonl").unlink()
    (run_dir / "human_study.json").unlink()


def test_a_lone_surrogate_in_an_answers_file_is_a_clean_error(run_dir: Path, tmp_path: Path) -> None:
    """JSON's "\\ud800" escape without its pair, in the annotator id or an answer: exit 2 with one line naming
    the file and the field (no UnicodeEncodeError), and nothing written."""
    res = export_study(run_dir, tmp_path / "s.html", sample=3, seed=7)
    ids = [it["item_id"] for it in json.loads(res.manifest.read_text())["items"]]
    cases = [
        (json.dumps({"annotator": "ann@", "study": res.study, "answers": {}}), "the annotator id"),
        (
            json.dumps({"annotator": "ann", "study": res.study, "answers": {ids[0]: "x@"}}),
            f"the answer to item {ids[0]}",
        ),
    ]
    cases = [(body.replace("@", "\\ud800"), field) for body, field in cases]  # the escape, without its pair
    for i, (body, field) in enumerate(cases):
        sheet = tmp_path / f"sur{i}.json"
        sheet.write_text(body)
        r = CliRunner().invoke(
            app, ["human-study", "import", str(sheet), "--into", str(run_dir), "--study", str(res.manifest)]
        )
        msg = " ".join(r.output.split())
        assert r.exit_code == 2 and isinstance(r.exception, SystemExit), r.output
        assert str(sheet) in msg and f"{field} holds a lone surrogate" in msg and "UnicodeEncodeError" not in msg
        assert not (run_dir / "human_records.jsonl").exists() and not (run_dir / "human_study.json").exists()


def test_export_refuses_bad_options(run_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--kind"):
        export_study(run_dir, tmp_path / "a.html", kind="vibes")
    with pytest.raises(ConfigError, match=".html"):
        export_study(run_dir, tmp_path / "a.txt")
    with pytest.raises(ConfigError, match="--sample"):
        export_study(run_dir, tmp_path / "a.html", sample=0)
    assert not any(tmp_path.iterdir())
