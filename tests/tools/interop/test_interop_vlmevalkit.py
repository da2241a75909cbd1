"""VLMEvalKit prediction files (not on the package registry: the format is read from its public repository
and written down in docs/interop.md) in all three of its prediction formats, written here the way
VLMEvalKit's `dump` writes them, imported by `score-responses --from vlmevalkit`."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from test_interop_support import canned_answer, comparable, small_dataset
from vidaudit.core.errors import DataError
from vidaudit.core.manifest import load_samples
from vidaudit.tools.interop.logs import import_responses
from vidaudit.tools.interop.vlmevalkit import FAIL_MSG, names_from_path

pd = pytest.importorskip("pandas", reason="the interop extra is not installed (pip install 'vidaudit[interop]')")

MODEL = "GPT4o_20241120"
EVAL_ID = "T20261201_G1a2b3c4d"


def dump(rows: list[dict], path: Path) -> Path:
    """As VLMEvalKit's `vlmeval.smp.file.dump`: tsv quoted and tab-separated, xlsx, json records (indent 4)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    df = pd.DataFrame(rows)
    if path.suffix == ".tsv":
        df.to_csv(path, sep="\t", index=False, encoding="utf-8", quoting=csv.QUOTE_ALL)
    elif path.suffix == ".xlsx":
        df.to_excel(path, index=False)
    else:
        path.write_text(json.dumps(df.to_dict("records"), indent=4, ensure_ascii=False), encoding="utf-8")
    return path


def table(samples, predictions: dict[str, str], with_sample_id: bool = True) -> list[dict]:
    """The dataset's own columns (index, video, question, answer, ...) plus `prediction`."""
    rows = []
    for i, s in enumerate(samples):
        row = {
            "index": i if with_sample_id else s.sample_id,
            "video": Path(s.video.path).stem,
            "question": s.question,
            "answer": s.answer,
            "prediction": predictions[s.sample_id],
        }
        if with_sample_id:
            row["sample_id"] = s.sample_id
        rows.append(row)
    return rows


def own_scores(manifest: Path, texts: dict[str, str], condition: str, tmp: Path) -> list:
    from vidaudit.score.stage import score_responses

    f = tmp / "responses.jsonl"
    f.write_text(
        "".join(
            json.dumps(
                {
                    "sample_id": k,
                    "model": MODEL,
                    "condition": condition,
                    **({"response": None, "status": "api_error"} if v == FAIL_MSG else {"response": v}),
                }
            )
            + "\n"
            for k, v in texts.items()
        )
    )
    return score_responses(manifest, f, suite="counting").records


@pytest.fixture(scope="module")
def small(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_dataset(smoke_dir, tmp_path_factory.mktemp("vlm") / "data")


@pytest.fixture(scope="module")
def predictions(small: Path) -> dict[str, str]:
    samples = load_samples(small)
    out = {s.sample_id: canned_answer(s) for s in samples}
    out[samples[0].sample_id] = 'Ledger:\n- at 1.00 s: "contact"\t(tab), «ünïcode»\nFinal Answer: \\boxed{1}'
    out[samples[1].sample_id] = FAIL_MSG
    return out


@pytest.mark.parametrize("ext", [".xlsx", ".tsv", ".json"])
def test_round_trip_every_format(ext: str, small: Path, predictions: dict[str, str], tmp_path: Path) -> None:
    if ext == ".xlsx":
        pytest.importorskip("openpyxl", reason="xlsx needs openpyxl (the interop extra)")
    samples = load_samples(small)
    f = dump(table(samples, predictions), tmp_path / "outputs" / MODEL / EVAL_ID / f"{MODEL}_vidaudit_counting{ext}")
    scored = import_responses("vlmevalkit", f, small)
    assert {r.model for r in scored.records} == {MODEL}
    assert {r.condition for r in scored.records} == {"vlmevalkit:vidaudit_counting"}
    assert comparable(scored.records) == comparable(
        own_scores(small / "manifest.jsonl", predictions, "vlmevalkit:vidaudit_counting", tmp_path)
    )
    failed = next(r for r in scored.records if r.sample_id == samples[1].sample_id)
    assert (failed.status, failed.correct) == ("api_error", None)
    assert (
        scored.raw_text[next(r.trial_id for r in scored.records if r.sample_id == samples[0].sample_id)]
        == predictions[samples[0].sample_id]
    )  # quotes, tabs, newlines and unicode survive the format


def test_index_is_the_key_without_a_sample_id_column(small: Path, predictions: dict[str, str], tmp_path: Path) -> None:
    samples = load_samples(small)
    f = dump(table(samples, predictions, with_sample_id=False), tmp_path / MODEL / f"{MODEL}_vidaudit_counting.tsv")
    scored = import_responses("vlmevalkit", tmp_path / MODEL, small)  # a directory with one prediction file
    assert sorted(r.sample_id for r in scored.records) == sorted(s.sample_id for s in samples)
    assert names_from_path(f) == (MODEL, "vidaudit_counting")
    assert scored.source["key"] == "the index column"


def test_refusals_name_what_they_found(small: Path, predictions: dict[str, str], tmp_path: Path) -> None:
    samples = load_samples(small)
    rows = table(samples, predictions)
    with pytest.raises(DataError, match=r"a \.pkl file is not a VLMEvalKit prediction format .* xlsx, tsv or json"):
        import_responses("vlmevalkit", dump(rows, tmp_path / "a" / "x.json").rename(tmp_path / "a" / "x.pkl"), small)
    with pytest.raises(DataError, match="no prediction column .*columns found: index, video"):
        import_responses(
            "vlmevalkit",
            dump([{k: v for k, v in r.items() if k != "prediction"} for r in rows], tmp_path / "b" / "x.tsv"),
            small,
        )
    with pytest.raises(DataError, match="log of suite toy, but .* holds counting samples"):
        import_responses("vlmevalkit", dump([{**r, "suite": "toy"} for r in rows], tmp_path / "c" / "x.tsv"), small)
    with pytest.raises(DataError, match=r"suite stress_reverse \(its dataset name vidaudit_stress_reverse\)"):
        import_responses(
            "vlmevalkit", dump(rows, tmp_path / "d" / MODEL / f"{MODEL}_vidaudit_stress_reverse.tsv"), small
        )
    odd = [{**r, "sample_id": f"other-{i}"} if i < 3 else r for i, r in enumerate(rows)]
    with pytest.raises(DataError, match=r"3 of 5 rows .* lacks \(matched by the sample_id column\): other-0, other-1"):
        import_responses("vlmevalkit", dump(odd, tmp_path / "e" / "x.json"), small)
    dump(rows, tmp_path / "f" / "one.tsv")
    dump(rows, tmp_path / "f" / "two.json")
    with pytest.raises(DataError, match="holds 2 VLMEvalKit prediction files; name one"):
        import_responses("vlmevalkit", tmp_path / "f", small)


def test_every_failure_marker_and_a_cut_cell_are_not_scored_as_text(small: Path, tmp_path: Path) -> None:
    """VLMEvalKit's failure texts besides the bare FAIL_MSG (a wrapper's trailing space, `chat`'s suffix, the
    newer `INFER_FAIL_MSG`) are api errors, and a prediction its xlsx writer cut at Excel's 32,767 characters is
    truncated: each was scored as the model's answer (the cut one as its first, wrong, boxed guess). The newer
    run folder `T<date>-<time>` names the model and the dataset."""
    samples = load_samples(small)
    cut = ("First guess \\boxed{1}, checking again. " + "x" * 40_000 + " Final Answer: \\boxed{3}")[:32767]
    texts = [
        "Failed to obtain answer via API. ",
        "Failed to obtain answer via API.: Failed with all possible conversation turns.",
        "Failed to obtain answer",
        cut,
    ]
    predictions = {s.sample_id: canned_answer(s) for s in samples} | {
        s.sample_id: t for s, t in zip(samples, texts, strict=False)
    }
    f = dump(table(samples, predictions), tmp_path / MODEL / "T20261201-093000" / f"{MODEL}_vidaudit_counting.xlsx")
    scored = import_responses("vlmevalkit", f, small)
    by_id = {r.sample_id: r for r in scored.records}
    got = [(by_id[s.sample_id].status, by_id[s.sample_id].correct) for s in samples[:4]]
    assert got == [("api_error", None)] * 3 + [("truncated", None)]
    assert {(r.model, r.condition) for r in scored.records} == {(MODEL, "vlmevalkit:vidaudit_counting")}
    rest = {s.sample_id: predictions[s.sample_id] for s in samples[4:]}
    own = own_scores(small / "manifest.jsonl", rest, "vlmevalkit:vidaudit_counting", tmp_path)
    assert comparable([r for r in scored.records if r.sample_id in rest]) == comparable(own)
