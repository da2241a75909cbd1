"""human-study export's stratified draws (--stratify, --per-stratum, --unit) and the paper's named subset
(--subset reveal-paper), on real generated datasets and runs: pairs never split, the spread exact, the same
draw for the same seed, and a too-small pool a one-line error or explicit shortfall lines."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from test_human_study import oracle_run
from vidaudit.cli import app
from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples
from vidaudit.tools.humanstudy.export import Draw, export_study
from vidaudit.tools.humanstudy.items import StudyItem
from vidaudit.tools.humanstudy.select import select_by_rules
from vidaudit.tools.humanstudy.subsets import SUBSETS, Rule, Stratified


def _cli(*args: object, code: int = 0) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == code, r.output
    return r.output


def _manifest_samples(man: Path) -> list[str]:
    return [it["sample_id"] for it in json.loads(man.read_text())["items"]]


# --------------------------------------------------------------------------- the draw, property-tested


def _pool(cats: list[tuple[str, int]]) -> tuple[list[StudyItem], dict[str, dict]]:
    """Pairs of items (a claim and its control) per category: ``(category, n_pairs)``."""
    items, params = [], {}
    for cat, n in cats:
        for p in range(n):
            for truth in (False, True):
                sid = f"{cat}-{p}-{truth}"
                items.append(
                    StudyItem(
                        item_id="i" + sid,
                        sample_id=sid,
                        kind="choice",
                        probe="sycophancy",
                        condition="video",
                        question="q",
                        options=[("A", "a"), ("B", "b")],
                        video_path=f"{sid}.mp4",
                    )
                )
                params[sid] = {"category": cat, "pair_id": f"{cat}-{p}", "claim_is_true": truth}
    return items, params


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 12), min_size=1, max_size=5), st.integers(1, 30), st.integers(0, 5), st.booleans())
def test_even_spread_whole_pairs_and_seeded(sizes: list[int], k: int, seed: int, per: bool) -> None:
    items, params = _pool([(f"C{i}", n) for i, n in enumerate(sizes)])
    rule = Rule(("category",), per_stratum=k if per else None, total=None if per else k, unit="pair_id")
    avail = {f"C{i}": n for i, n in enumerate(sizes) if n}  # strata are the values present
    need = {c: k for c in avail} if per else None
    try:
        chosen, drawn = select_by_rules(items, Stratified([rule], params, seed, allow_shortfall=True))
    except DataError as e:  # nothing at all to draw
        assert "no unit" in str(e) and sum(sizes) == 0
        return
    again, _ = select_by_rules(items, Stratified([rule], params, seed, allow_shortfall=True))
    assert chosen == again  # the same seed, the same page
    pairs = Counter(params[i.sample_id]["pair_id"] for i in chosen)
    assert set(pairs.values()) == {2}  # never split
    got = Counter(params[i.sample_id]["category"] for i in chosen)
    got = Counter({c: n // 2 for c, n in got.items()})
    if need is not None:
        assert all(got[c] == min(k, avail[c]) for c in avail)
    else:
        base = k // len(avail)
        for c in avail:  # each stratum its even share
            assert got[c] in (min(base, avail[c]), min(base + 1, avail[c]))
        if all(avail[c] > base for c in avail):  # enough everywhere: exact
            assert sum(got.values()) == min(k, sum(min(base + 1, a) for a in avail.values()))
            assert max(got.values()) - min(got.values()) <= 1
    short = [c for c in avail if got[c] < (k if per else base)]
    assert len(drawn.shortfall) >= len(short)
    if drawn.shortfall:
        with pytest.raises(DataError) as e:
            select_by_rules(items, Stratified([rule], params, seed))
        assert "\n" not in str(e.value) and "--allow-shortfall" in str(e.value)


def test_the_remainder_goes_to_strata_drawn_by_the_seed() -> None:
    items, params = _pool([(c, 20) for c in "ABCDEF"])
    rule = Rule(("category",), total=50, unit="pair_id")
    lucky = set()
    for seed in range(12):
        _, drawn = select_by_rules(items, Stratified([rule], params, seed))
        counts = next(iter(drawn.counts.values()))
        assert sorted(counts.values()) == [8, 8, 8, 8, 9, 9]
        lucky.add(frozenset(k for k, n in counts.items() if n == 9))
    assert len(lucky) > 3  # not always the same two strata


def test_bad_draws_are_one_line_errors() -> None:
    items, params = _pool([("A", 3)])
    with pytest.raises(ConfigError, match="exactly one of"):
        Rule(("category",))
    with pytest.raises(DataError, match="params.nope; its params: category, claim_is_true, pair_id"):
        select_by_rules(items, Stratified([Rule(("nope",), total=2)], params, 0))
    with pytest.raises(DataError, match="different strata"):
        select_by_rules(items, Stratified([Rule(("claim_is_true",), total=2, unit="pair_id")], params, 0))
    with pytest.raises(ConfigError, match="drop --sample"):
        Draw(sample=3, subset="reveal-paper").rules()
    with pytest.raises(ConfigError, match="unknown --subset 'x'; choose from reveal-paper"):
        Draw(subset="x").rules()
    with pytest.raises(ConfigError, match="need --stratify"):
        Draw(per_stratum=2).rules()


def test_the_paper_subset_has_the_papers_numbers() -> None:
    rules = {r.probe: r for r in SUBSETS["reveal-paper"].rules}
    assert rules["sycophancy"].per_stratum == 100 and rules["sycophancy"].unit == "pair_id"
    assert [s[0] for s in rules["sycophancy"].strata or ()] == ["TR", "FGA", "SR", "OA"]
    assert rules["camera_motion"].total == 50 and len(rules["camera_motion"].strata or ()) == 6
    assert rules["lane_change"].total == 50 and len(rules["lane_change"].strata or ()) == 2


# --------------------------------------------------------------------------- real datasets and runs


@pytest.fixture(scope="module")
def camera_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return oracle_run(tmp_path_factory.mktemp("subset_camera"), "camera_motion", "frames@4", "--seeds", "9")


def test_reveal_paper_camera_50_clips_even_over_six_motions(camera_run: Path, tmp_path: Path) -> None:
    out = _cli(
        "human-study",
        "export",
        camera_run,
        "--out",
        tmp_path / "s.html",
        "--subset",
        "reveal-paper",
        "--media",
        "folder",
    )
    assert "sycophancy: no item in this source" in out and "lane_change: no item" in out
    man = json.loads((tmp_path / "s.json").read_text())
    sids = _manifest_samples(tmp_path / "s.json")
    assert len(sids) == len(set(sids)) == 50
    motions = Counter(
        s.params["motion"]
        for s in load_samples(Path(json.loads((camera_run / "run.json").read_text())["data_dir"]))
        if s.sample_id in sids
    )
    assert sorted(motions.values()) == [8, 8, 8, 8, 9, 9] and len(motions) == 6
    assert man["selection"]["subset"] == "reveal-paper"
    assert sorted(next(iter(man["selection"]["counts"].values())).values()) == [8, 8, 8, 8, 9, 9]
    assert (camera_run / "human_studies" / f"{man['study']}.json").is_file()
    # the same seed draws the same study; another seed another one
    export_study(camera_run, tmp_path / "t.html", draw=Draw(subset="reveal-paper"), media="folder")
    assert _manifest_samples(tmp_path / "t.json") == sids
    export_study(camera_run, tmp_path / "u.html", draw=Draw(subset="reveal-paper"), seed=1, media="folder")
    assert _manifest_samples(tmp_path / "u.json") != sids


def test_stratify_by_a_param_on_a_run(camera_run: Path, tmp_path: Path) -> None:
    res = export_study(camera_run, tmp_path / "s.html", draw=Draw(sample=13, stratify=("motion",)), media="folder")
    assert res.n_items == 13
    assert sorted(next(iter(res.counts.values())).values()) == [2, 2, 2, 2, 2, 3]
    # 54 clips, 9 per motion: 10 per motion is a one-line error, or all 54 with six shortfall lines
    out = _cli(
        "human-study",
        "export",
        camera_run,
        "--out",
        tmp_path / "e.html",
        "--stratify",
        "motion",
        "--per-stratum",
        "10",
        code=2,
    )
    assert "motion=zoom_in: 9 of 10" in out and "--allow-shortfall" in out and "Traceback" not in out
    out = _cli(
        "human-study",
        "export",
        camera_run,
        "--out",
        tmp_path / "f.html",
        "--stratify",
        "motion",
        "--per-stratum",
        "10",
        "--allow-shortfall",
        "--media",
        "folder",
    )
    assert out.count("shortfall:") == 6
    assert len(_manifest_samples(tmp_path / "f.json")) == 54


@pytest.fixture(scope="module")
def sycophancy_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return oracle_run(tmp_path_factory.mktemp("subset_syco"), "sycophancy", "frames#4")


def test_sycophancy_pairs_are_drawn_whole(sycophancy_run: Path, tmp_path: Path) -> None:
    data = Path(json.loads((sycophancy_run / "run.json").read_text())["data_dir"])
    samples = {s.sample_id: s for s in load_samples(data)}
    pairs = Counter(s.params["category"] for s in samples.values() if s.params["claim_is_true"])
    # the smoke set is far below the paper's 100 per category: one line naming every short category
    out = _cli(
        "human-study", "export", sycophancy_run, "--out", tmp_path / "p.html", "--subset", "reveal-paper", code=2
    )
    assert "category=TR" in out and "of 100" in out and "--allow-shortfall" in out
    for kind in ("performance", "quality"):
        res = export_study(
            sycophancy_run,
            tmp_path / f"{kind}.html",
            kind=kind,
            draw=Draw(subset="reveal-paper", allow_shortfall=True),
            media="folder",
        )
        chosen = [samples[s] for s in _manifest_samples(res.manifest)]
        by_pair = Counter(s.params["pair_id"] for s in chosen)
        assert set(by_pair.values()) == {2}  # claim and control together
        got = Counter(s.params["category"] for s in chosen if s.params["claim_is_true"])
        assert got == Counter({c: n for c, n in pairs.items() if c in ("TR", "FGA", "SR", "OA")})
        assert sum("shortfall:" in n for n in res.notes) == sum(1 for c in ("TR", "FGA", "SR", "OA"))
        if "COUNT" in pairs:
            assert any("category=COUNT" in n and "left out" in n for n in res.notes)
    # an exact smaller draw with the general options; pairs are never adjacent by construction of the page order
    k = min(n for c, n in pairs.items())
    res = export_study(
        sycophancy_run,
        tmp_path / "k.html",
        media="folder",
        draw=Draw(stratify=("category",), per_stratum=k, unit="pair_id"),
    )
    chosen = [samples[s] for s in _manifest_samples(res.manifest)]
    assert len(chosen) == 2 * k * len(pairs) and set(Counter(s.params["pair_id"] for s in chosen).values()) == {2}
    assert not res.notes


def test_reveal_paper_lane_50_balanced(tmp_path: Path) -> None:
    from laneclips import road_clip

    src = tmp_path / "clips"
    src.mkdir()
    road_clip(src / "change.mp4", True, 1.0)
    road_clip(src / "straight.mp4", False, 1.0)
    rows = [("change", "lane_change")] * 31 + [("straight", "no_change")] * 27
    for i, (clip, _) in enumerate(rows):  # one clip per row: a clip and segment listed twice is refused
        shutil.copy(src / f"{clip}.mp4", src / f"{clip}{i}.mp4")
    (src / "annotations.csv").write_text(
        "clip,label\n" + "".join(f"{clip}{i}.mp4,{label}\n" for i, (clip, label) in enumerate(rows))
    )
    _cli("generate", "stress", "--probe", "lane_change", "--source", src, "--out", tmp_path / "data")
    res = export_study(tmp_path / "data", tmp_path / "s.html", draw=Draw(subset="reveal-paper"), media="folder")
    samples = {s.sample_id: s for s in load_samples(tmp_path / "data")}
    labels = Counter(samples[s].params["label"] for s in _manifest_samples(res.manifest))
    assert labels == Counter({"lane_change": 25, "no_change": 25})


# --------------------------------------------------------------------------- Reveal's cross-frame and gap subsets


@pytest.fixture(scope="module")
def cross_frame_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cross_frame smoke set run by the oracle under the generator's own config (raw and masked)."""
    root = tmp_path_factory.mktemp("subset_cf")
    _cli("generate", "stress", "--probe", "cross_frame", "--out", root / "data")
    _cli("run", "stress", "--config", root / "data" / "cross_frame.yaml", "--model", "oracle", "--out", root / "run")
    return root / "run"


def test_reveal_paper_cross_frame_25_masked(cross_frame_run: Path, tmp_path: Path) -> None:
    """B.6.1: items spread evenly over NExT-QA-T and -S, each with its abstention option, shown strip-masked: the
    media written are the run's masked renderings (ffmpeg reads them: k = 4 frames per source frame, each showing
    about v / S of the columns, together every column), and an imported answer sheet fills the TBSR table's
    human-ceiling column for the masked condition."""
    from realvideos import Player
    from vidaudit.tools.humanstudy.importing import import_answers

    data = Path(json.loads((cross_frame_run / "run.json").read_text())["data_dir"])
    samples = {s.sample_id: s for s in load_samples(data)}
    masked = next(
        c for c in json.loads((cross_frame_run / "run.json").read_text())["conditions"] if "strip_mask" in json.dumps(c)
    )
    out = _cli(
        "human-study", "export", cross_frame_run, "--out", tmp_path / "p.html", "--subset", "reveal-paper", code=2
    )
    assert "split=T: 2 of 13" in out and "split=S: 2 of 12" in out  # smoke: 4 items, the paper's 13 + 12
    res = export_study(
        cross_frame_run, tmp_path / "s.html", draw=Draw(subset="reveal-paper", allow_shortfall=True), media="folder"
    )
    man = json.loads(res.manifest.read_text())
    items = man["items"]
    assert sorted(samples[i["sample_id"]].params["split"] for i in items) == ["S", "S", "T", "T"]
    assert all(samples[i["sample_id"]].params["abstention"] for i in items)
    assert all(i["options"][-1][1] == "Cannot determine from the video" for i in items)
    assert len({i["condition"] for i in items}) == 1 and "strip_mask" in items[0]["condition"]
    assert any("cross_frame: 4 unit(s) left out (not abstention=True)" in n for n in res.notes)
    player = Player.required()
    for it in items:
        media = tmp_path / "s_media" / f"{it['shown_sha256']}.mp4"
        assert media.is_file() and it["video_sha256"] == samples[it["sample_id"]].video.sha256
        _, frames = player.frames(media)
        src_frames = samples[it["sample_id"]].video.n_frames
        assert len(frames) == 4 * src_frames
        lit = [(f.max(axis=2) > 48).any(axis=0) for f in frames]  # columns showing anything
        assert max(c.mean() for c in lit) < 0.3 and np.logical_or.reduce(lit[:8]).mean() > 0.9
    sheet = tmp_path / "answers.json"
    sheet.write_text(
        json.dumps({"annotator": "a", "study": res.study, "answers": {i["item_id"]: i["correct"] for i in items}})
    )
    import_answers([sheet], cross_frame_run, study=res.manifest)
    _cli("report", cross_frame_run)
    rep = json.loads((cross_frame_run / "report" / "report.json").read_text())
    table = next(
        t
        for s in rep["sections"]
        if s["id"] == "stress-cross-frame"
        for t in s["tables"]
        if t["id"] == "stress-cross-frame-tbsr"
    )
    col = table["columns"].index("human ceiling")
    assert {r[col] for r in table["rows"]} == {"100.0 (4/4)"}, (masked, table["rows"])


def test_reveal_paper_100_gapped_videos(tmp_path: Path) -> None:
    """§4.4 / E.5: gapped videos, each one unit of its MCQ and its summary (drawn whole); the probe's other
    clips are left out, the smoke set's 2 of 100 a shortfall line."""
    _cli("generate", "stress", "--probe", "expectation", "--out", tmp_path / "data")
    samples = {s.sample_id: s for s in load_samples(tmp_path / "data")}
    out = _cli(
        "human-study", "export", tmp_path / "data", "--out", tmp_path / "p.html", "--subset", "reveal-paper", code=2
    )
    assert "family=gap: 2 of 100" in out
    res = export_study(
        tmp_path / "data", tmp_path / "s.html", media="folder", draw=Draw(subset="reveal-paper", allow_shortfall=True)
    )
    chosen = [samples[s] for s in _manifest_samples(res.manifest)]
    assert sorted(s.params["task"] for s in chosen) == ["gap_mcq", "gap_mcq", "gap_summary", "gap_summary"]
    by_source = Counter(s.params["source_name"] for s in chosen)
    assert set(by_source.values()) == {2}
    assert any("not family=gap" in n for n in res.notes)
