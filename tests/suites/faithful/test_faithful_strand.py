"""The STRAND release loader and validator on crafted files with every kind of defect, the policies,
the cluster key, the importer, and the two commands through a typer app (``register_extra_commands``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vidaudit.core.errors import ConfigError, DataError
from vidaudit.core.manifest import load_samples, read_dataset_info
from vidaudit.suites.faithful.cli import register_extra_commands
from vidaudit.suites.faithful.strand_import import import_strand
from vidaudit.suites.faithful.strand_validate import KINDS, source_of, validate_strand
from vidaudit.video.encode import write_video

GOOD = {
    "video_name": "0001_aaaaaaaaaaa.mp4",
    "questions": ["Does the man in red pass the ball before the goal?", "Does the keeper save the second shot?"],
    "answers": ["Yes", "No"],
    "sub-questions": [
        ["Does the man in red pass the ball?", "Is a goal scored?"],
        ["Does the keeper save a shot?", "Is there a second shot?"],
    ],
    "sub-answers": [["Yes", "Yes"], ["Yes", "Yes"]],
}


def _write(d: Path, name: str, obj: dict) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(json.dumps(obj), encoding="utf-8")


def _only(tmp_path: Path, obj: dict, **kw):
    d = tmp_path / "rel"
    _write(d, "sample_0001.json", obj)
    return validate_strand(d, **kw)


def _kinds(res) -> list[tuple[int | None, str]]:
    return [(f.index, f.kind) for f in res.findings]


def test_a_clean_file_has_no_findings(tmp_path: Path) -> None:
    res = _only(tmp_path, GOOD)
    assert res.findings == [] and res.targets_read == res.targets_kept == 2
    assert res.counts == {k: 0 for k in KINDS}


def test_target_level_length_mismatch_affects_the_whole_file(tmp_path: Path) -> None:
    res = _only(tmp_path, {**GOOD, "answers": ["Yes"]})
    assert _kinds(res) == [(1, "length_mismatch")]
    assert "answers 1" in res.findings[0].detail
    assert res.targets_read == 2 and res.targets_kept == 0


def test_sub_level_length_mismatch_affects_its_target(tmp_path: Path) -> None:
    res = _only(tmp_path, {**GOOD, "sub-answers": [["Yes", "Yes", "No"], ["Yes", "Yes"]]})
    assert _kinds(res) == [(0, "length_mismatch")]
    assert res.targets_kept == 1 and res.kept[0].index == 1


def test_answers_outside_yes_no_are_found_and_normalisations_logged(tmp_path: Path) -> None:
    obj = {**GOOD, "answers": [" yes", "NA"], "sub-answers": [["YES", "maybe"], ["Yes", "NA"]]}
    res = _only(tmp_path, obj)
    bad = [f for f in res.findings if f.kind == "non_yes_no"]
    assert [(f.index, f.detail) for f in bad] == [
        (0, "sub-answers[0][1] = 'maybe'"),
        (1, "answers[1] = 'NA' (NA)"),
        (1, "sub-answers[1][1] = 'NA' (NA)"),
    ]
    assert res.counts["non_yes_no"] == 3 and res.targets_kept == 0
    assert {(n["index"], n["from"], n["to"]) for n in res.normalised} == {(0, " yes", "Yes"), (0, "YES", "Yes")}


def test_a_target_repeated_as_its_own_sub_question(tmp_path: Path) -> None:
    obj = {
        **GOOD,
        "sub-questions": [
            ["Does the man in red pass the ball before the goal? ", "Is a goal scored?"],
            GOOD["sub-questions"][1],
        ],
    }
    res = _only(tmp_path, obj)
    assert _kinds(res) == [(0, "sub_equals_target")]
    assert res.targets_kept == 1


def test_conflicting_answers_to_one_text_in_one_video(tmp_path: Path) -> None:
    obj = {
        **GOOD,
        "sub-questions": [GOOD["sub-questions"][0], ["Is a goal scored?", "Is there a second shot?"]],
        "sub-answers": [["Yes", "Yes"], ["No", "Yes"]],
    }
    res = _only(tmp_path, obj)
    assert _kinds(res) == [(0, "conflicting_answers")]
    assert (
        "sub-questions[0][1] = Yes" in res.findings[0].detail and "sub-questions[1][0] = No" in res.findings[0].detail
    )
    assert res.targets_kept == 0  # both targets carry the conflicting text


def test_duplicated_targets_keep_the_first(tmp_path: Path) -> None:
    obj = {k: v + v[:1] for k, v in GOOD.items() if k != "video_name"} | {"video_name": GOOD["video_name"]}
    res = _only(tmp_path, obj)
    assert _kinds(res) == [(2, "duplicate_target")]
    assert [t.index for t in res.kept] == [0, 1]


def test_sliding_sub_lists_are_detected_by_lexical_overlap(tmp_path: Path) -> None:
    topics = [
        "referee whistle",
        "goalkeeper glove",
        "striker header",
        "corner flag",
        "substitute bench",
        "yellow card",
        "penalty spot",
    ]
    qs = [f"Does the {t} appear before halftime?" for t in topics]
    subs = [[f"Is the {t} visible?", f"Does the {t} move?"] for t in topics]
    # like the release's sample_0071: two extra sub-lists from target 2 on, so target i's list sits at i + 2
    slid = subs[:2] + [["Is the crowd loud?"], ["Is it raining?"]] + subs[2:]
    obj = {
        "video_name": "0071_bbbbbbbbbbb.mp4",
        "questions": qs,
        "answers": ["Yes"] * 7,
        "sub-questions": slid,
        "sub-answers": [["Yes"] * len(s) for s in slid],
    }
    res = _only(tmp_path, obj)
    flagged = [f.index for f in res.findings if f.kind == "sliding_sub_lists"]
    assert flagged == [2, 3, 4, 5, 6]
    assert all("offset +2" in f.detail for f in res.findings if f.kind == "sliding_sub_lists")
    assert res.counts["length_mismatch"] == 1  # 7 targets, 9 sub-lists
    clean = {**obj, "sub-questions": subs, "sub-answers": [["Yes", "Yes"]] * 7}
    assert _only(tmp_path / "clean", clean).findings == []


def test_policies_and_the_final_n(tmp_path: Path) -> None:
    d = tmp_path / "rel"
    _write(d, "sample_0001.json", {**GOOD, "answers": ["Yes", "NA"]})
    _write(d, "sample_0002.json", {**GOOD, "video_name": "0002_1_ccccccccccc.mp4"})
    drop_t = validate_strand(d)
    drop_f = validate_strand(d, on_invalid="drop-file")
    keep = validate_strand(d, on_invalid="keep-as-wrong")
    assert (drop_t.targets_kept, drop_f.targets_kept, keep.targets_kept) == (3, 2, 4)
    assert all(r.targets_read == 4 and r.files == 2 for r in (drop_t, drop_f, keep))
    assert {t.index for t in keep.kept if t.invalid} == {1}
    with pytest.raises(ConfigError, match="on-invalid"):
        validate_strand(d, on_invalid="ignore")


def test_cluster_key_is_the_source_video_or_the_file(tmp_path: Path) -> None:
    assert source_of("0036_1_qh-yxk-qAOc.mp4") == "qh-yxk-qAOc"
    assert source_of("0036_16_qh-yxk-qAOc.mp4") == "qh-yxk-qAOc"
    assert source_of("0072_S1t_8iRFVs4.mp4") == "S1t_8iRFVs4"
    assert source_of("clip.mp4") is None
    d = tmp_path / "rel"
    for k in (1, 2):
        _write(d, f"sample_0036_{k}.json", {**GOOD, "video_name": f"0036_{k}_qh-yxk-qAOc.mp4"})
    _write(d, "sample_0072.json", {**GOOD, "video_name": "0072_S1t_8iRFVs4.mp4"})
    _write(d, "odd.json", {**GOOD, "video_name": "clip.mp4"})
    by_source = validate_strand(d)
    assert by_source.n_clusters == 3 and by_source.unparsed_video_names == ["clip.mp4"]
    assert validate_strand(d, cluster_by="file").n_clusters == 4


def test_unreadable_files_are_errors_not_skips(tmp_path: Path) -> None:
    d = tmp_path / "rel"
    d.mkdir()
    (d / "sample_0001.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not valid JSON"):
        validate_strand(d)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no .json files"):
        validate_strand(tmp_path / "empty")


def test_import_without_videos_writes_samples_that_name_what_the_release_lacks(tmp_path: Path) -> None:
    d = tmp_path / "rel"
    _write(d, "sample_0001.json", {**GOOD, "answers": ["Yes", "NA"]})
    res = import_strand(d, tmp_path / "out", on_invalid="keep-as-wrong")
    samples = load_samples(tmp_path / "out")
    assert len(samples) == 2 + 4
    t1 = next(s for s in samples if s.sample_id == "sample_0001-t001")
    assert t1.params["invalid"] == ["non_yes_no"] and t1.params["role"] == "target"
    assert t1.params["sub_sample_ids"] == ["sample_0001-t001-s1", "sample_0001-t001-s2"]
    assert all(s.params["capabilities"]["probe_types"] is False for s in samples)
    assert all(s.params["source_video_id"] == "aaaaaaaaaaa" for s in samples)
    assert samples[0].video.sha256 is None
    v = json.loads((tmp_path / "out" / "validation.json").read_text())
    assert set(v) >= {"files", "targets_read", "targets_kept", "counts", "findings"}
    assert v["targets_kept"] == 2 and v["counts"]["non_yes_no"] == 1
    assert v["findings"] == [
        {"file": "sample_0001.json", "index": 1, "kind": "non_yes_no", "detail": "answers[1] = 'NA' (NA)"}
    ]
    assert read_dataset_info(tmp_path / "out")["capabilities"]["facts"] is False
    assert res.validation.targets_kept == 2


def test_import_with_videos_links_and_probes_them(tmp_path: Path) -> None:
    vids = tmp_path / "vids"
    vids.mkdir()
    write_video(vids / GOOD["video_name"], [np.zeros((64, 96, 3), np.uint8)] * 10, 10.0, 96, 64)
    d = tmp_path / "rel"
    _write(d, "sample_0001.json", GOOD)
    import_strand(d, tmp_path / "out", videos=vids)
    s = load_samples(tmp_path / "out")[0]
    assert s.video.sha256 and s.video.n_frames == 10 and (tmp_path / "out" / s.video.path).is_file()
    _write(d, "sample_0002.json", {**GOOD, "video_name": "0002_ddddddddddd.mp4"})
    with pytest.raises(DataError, match="not in"):
        import_strand(d, tmp_path / "out2", videos=vids)


def test_the_commands_through_a_typer_app(tmp_path: Path) -> None:
    app = typer.Typer()

    @app.command()
    def version() -> None:  # a second command, so that typer keeps the groups as sub-commands
        pass

    register_extra_commands(app)
    d = tmp_path / "rel"
    _write(d, "sample_0001.json", {**GOOD, "answers": ["Yes", "NA"]})
    runner = CliRunner()
    r = runner.invoke(app, ["validate", "strand", str(d)])
    assert r.exit_code == 0, r.output
    v = json.loads((d / "validation.json").read_text())
    assert v["targets_read"] == 2 and v["targets_kept"] == 1
    r = runner.invoke(
        app, ["import", "strand", "--dir", str(d), "--out", str(tmp_path / "out"), "--on-invalid", "drop-file"]
    )
    assert r.exit_code == 0, r.output
    assert load_samples(tmp_path / "out") == []  # the only file has a finding
    r = runner.invoke(app, ["validate", "strand", str(d), "--on-invalid", "bogus"])
    assert r.exit_code == 2


# sample_0025's pattern (reconstructed from the issue; the release is not stored here): STRAND targets nest --
# a target is often one sub-question of the target before it ("Does #1 block #10's shot?" under "... before #7
# scores?"), so target i's words sit in sub-questions[i - 1] while its own list, a decomposition, shares fewer.
# The lists are aligned (each fits its own target at least as well), so nothing may be flagged.
NESTED = {
    "video_name": "0025_eeeeeeeeeee.mp4",
    "questions": [
        "Does #1 block #10's shot before #7 scores?",
        "Does #1 block #10's shot?",
        "Does #10 take a shot before #1 dives?",
        "Does the referee whistle before the kickoff?",
        "Does #4 pass to #9 before #9 heads the ball?",
        "Does #4 pass to #9?",
        "Does #9 receive the ball before #4 falls?",
    ],
    "answers": ["Yes", "Yes", "No", "Yes", "Yes", "Yes", "No"],
    "sub-questions": [
        ["Does #1 block #10's shot?", "Does #7 score?", "Does #10 shoot before #7 scores?"],
        ["Does #10 take a shot?", "Does #1 dive?"],
        ["Does the keeper move left?", "Is the ball kicked by #10?"],
        ["Is there a referee?", "Does the referee whistle?", "Is there a kickoff?"],
        ["Does #4 pass to #9?", "Does #9 head the ball?", "Does #9 head after #4 passes to #9?"],
        ["Does #9 receive the ball?", "Does #4 kick?"],
        ["Does the defender slip?", "Is the header by #9?"],
    ],
    "sub-answers": [
        ["Yes", "Yes", "Yes"],
        ["Yes", "Yes"],
        ["No", "Yes"],
        ["Yes", "Yes", "Yes"],
        ["Yes", "Yes", "Yes"],
        ["Yes", "Yes"],
        ["Yes", "Yes"],
    ],
}


def test_nested_targets_are_not_sliding_sub_lists(tmp_path: Path) -> None:
    from vidaudit.suites.faithful import strand_validate as V

    res = _only(tmp_path, NESTED)
    assert res.findings == [] and res.targets_kept == 7
    # the rule before this fix (the share of the target's words in the best neighbour list beats the share in its
    # own list by 25 points) flagged exactly four of these targets
    own = [V.words(q) for q in NESTED["questions"]]
    lists = [frozenset().union(*(V.words(s) for s in sl)) for sl in NESTED["sub-questions"]]

    def score(i: int, j: int) -> float:
        return len(own[i] & lists[j]) / len(own[i]) if 0 <= j < len(lists) else 0.0

    old = {i: max((score(i, i + k), k) for k in (-3, -2, -1, 1, 2, 3)) for i in range(7)}
    old_flag = {i: k for i, (s, k) in old.items() if s >= 0.4 and s >= score(i, i) + 0.25}  # its SLIDE_MIN, MARGIN
    in_runs = [i for i, k in old_flag.items() if old_flag.get(i - 1) == k or old_flag.get(i + 1) == k]
    assert in_runs == [1, 2, 5, 6]
    # and the same lists slid by two (two lists inserted before target 3) are still found
    slid = {
        **NESTED,
        "sub-questions": NESTED["sub-questions"][:3]
        + [["Is it raining?"], ["Is the crowd loud?"]]
        + NESTED["sub-questions"][3:],
        "sub-answers": NESTED["sub-answers"][:3] + [["No"], ["Yes"]] + NESTED["sub-answers"][3:],
    }
    flagged = [f.index for f in _only(tmp_path / "slid", slid).findings if f.kind == "sliding_sub_lists"]
    assert flagged == [3, 4, 5, 6]


# Files in the shape of the release's sample_0071 and sample_0025 (the release is not stored with vidaudit; the text
# here is written for the test). sample_0071 is a penalty shootout: ~46 targets about a handful of teams, keepers and
# rounds, each with 2-5 sub-questions that repeat the same few facts ("Did France miss two penalties in a row?" under
# a dozen targets), so a target's words are spread over many lists. In the release two targets were dropped near
# the start and their lists kept (44 targets, 46 lists: every list from target 5 on sits two places late).
# Measured on a reconstruction of it from the public pre-release file (caothientri2001vn/video_hallucination,
# benchmark/sample_0071_MCWJNOfJoSM.json @12003eab, two targets dropped at 5 and 6, the last target and list
# dropped): the first rule (share of the target's words) found 21 of the 39 slid lists, the Dice rule 9, the
# alignment 39; on the pre-release sample_0025 (66 aligned targets, every pair differing in one word) the first
# rule flagged exactly 4 (20, 21, 50, 51: the four false positives), the Dice rule and the alignment none.
TEAMS, KEEPERS = ("red", "blue"), ("green", "yellow")


def _shootout(seed: int, n: int = 47) -> dict:
    """A shootout-shaped release file: every target has 2-5 sub-questions, one or two on its own facts (the first
    restates its shot, as STRAND's first sub-question mostly does) and the rest drawn from a pool of facts the whole file repeats (the team that won,
    the keepers, the misses in a row). Neighbours share team, keeper and round often: their lists overlap."""
    rng = np.random.default_rng(seed)
    pool = (
        [f"Did the {t} team miss two penalties in a row?" for t in TEAMS]
        + [f"Was there a goalkeeper in {k} during the shootout?" for k in KEEPERS]
        + [
            "Did the shootout finish in four rounds?",
            "Did the team that kicked second win the shootout?",
            "Was the final score four to two?",
        ]
    )
    qs, subq = [], []
    for i in range(n):
        team, keeper = TEAMS[i % 2], KEEPERS[(i // 2) % 2]
        rnd, num = 1 + (i // 4) % 8, int(rng.integers(2, 30))
        verb = ["score", "miss", "shoot toward the left", "shoot toward the centre"][int(rng.integers(4))]
        qs.append(f"Did the {team} player number {num} {verb} in round {rnd} before the keeper in {keeper} moved?")
        own = [
            f"Did the {team} player number {num} {verb} in round {rnd}?",
            f"Did the keeper in {keeper} move in round {rnd}?",
        ][: 1 + int(rng.integers(2))]  # the first: its own
        extra = [pool[int(j)] for j in rng.permutation(len(pool))[: 1 + int(rng.integers(3))]]
        subq.append(own + extra)
    return {
        "video_name": "0071_ccccccccccc.mp4",
        "questions": qs,
        "answers": ["Yes"] * n,
        "sub-questions": subq,
        "sub-answers": [["Yes"] * len(x) for x in subq],
    }


def _release_slide(obj: dict) -> dict:
    """As in the release: targets 5 and 6 dropped with their lists kept, and the last target and list dropped."""
    keep = [i for i in range(len(obj["questions"]) - 1) if i not in (5, 6)]
    return {
        **obj,
        "questions": [obj["questions"][i] for i in keep],
        "answers": [obj["answers"][i] for i in keep],
        "sub-questions": obj["sub-questions"][:-1],
        "sub-answers": obj["sub-answers"][:-1],
    }


def _slid(res) -> list[int]:
    return [f.index for f in res.findings if f.kind == "sliding_sub_lists"]


@pytest.mark.parametrize("seed", range(6))
def test_a_release_like_slide_is_found_whole(tmp_path: Path, seed: int) -> None:
    """The slid targets (5 to the end: 39 of 44) are found as one run to the end, and the aligned file has no
    finding. Where the run starts can move by one when a dropped target's list fits the target beside it better
    than its own (8 of 200 generated files; none of these seeds, nor the reconstruction above). The Dice rule this
    replaced found fewer than 20 of the 39 on these files (9 on the reconstruction)."""
    obj = _shootout(seed)
    assert _only(tmp_path / "aligned", obj).findings == []
    res = _only(tmp_path / "slid", _release_slide(obj))
    flagged = _slid(res)
    assert flagged == list(range(flagged[0], 44)) and abs(flagged[0] - 5) <= 1
    assert sum("offset +2" in f.detail for f in res.findings if f.kind == "sliding_sub_lists") >= 38


def test_repetitive_aligned_targets_are_not_a_slide(tmp_path: Path) -> None:
    """sample_0025's shape: pairs of targets that differ in one word ("... hit the target?" / "... miss the
    target?", red / blue), whose lists share most words with the neighbours' -- where the first rule flagged four
    aligned targets. Aligned: nothing; two lists inserted at 20: exactly the targets from 20 on."""
    qs, subq = [], []
    for thing in ("ball", "ring"):
        for man in ("red", "blue"):
            for nth in ("first", "second", "third", "fourth"):
                for what in ("hit", "miss"):
                    qs.append(f"Did the {nth} {thing} thrown by the {man} shirt man {what} the target?")
                    subq.append(
                        [
                            f"Did the man in the {man} shirt throw a {nth} {thing}?",
                            f"Did the {nth} {thing} thrown by the man in the {man} shirt {what} the target?",
                            f"Was there a man wearing a {man} shirt in the video?",
                        ][: 2 + (what == "miss")]
                    )
    obj = {
        "video_name": "0025_ddddddddddd.mp4",
        "questions": qs,
        "answers": ["Yes"] * len(qs),
        "sub-questions": subq,
        "sub-answers": [["Yes"] * len(x) for x in subq],
    }
    assert _only(tmp_path / "aligned", obj).findings == []
    ins = subq[:20] + [["Is it raining?"], ["Is the crowd loud?"]] + subq[20:]
    res = _only(tmp_path / "slid", {**obj, "sub-questions": ins, "sub-answers": [["Yes"] * len(x) for x in ins]})
    assert _slid(res) == list(range(20, len(qs)))


@given(seed=st.integers(0, 10_000), at=st.integers(0, 40), k=st.integers(-2, 2))
@settings(max_examples=40, deadline=None)
def test_any_slide_is_found_and_an_aligned_file_is_left_alone(seed: int, at: int, k: int) -> None:
    """Lists inserted (k > 0) or dropped (k < 0) at ``at`` slide every later target: those are flagged, none
    before ``at``; with k = 0 nothing is."""
    from vidaudit.suites.faithful.strand_validate import _sliding

    obj = _shootout(seed)
    qs, subq = obj["questions"], obj["sub-questions"]
    moved = subq[:at] + [["Is it raining?"]] * k + subq[at:] if k >= 0 else subq[:at] + subq[at - k :]
    flagged = [f.index for f in _sliding("f.json", qs, moved)]
    if k == 0:
        assert flagged == []
    else:
        assert flagged and min(flagged) >= at - 1 and set(range(at + abs(k), len(qs) - abs(k))) <= set(flagged)


def test_statistics_of_the_release_beside_the_paper(tmp_path: Path) -> None:
    d = tmp_path / "rel"
    _write(d, "sample_0001.json", {**GOOD, "answers": ["Yes", "NA"]})
    _write(
        d,
        "sample_0002.json",
        {**GOOD, "video_name": "0002_1_ccccccccccc.mp4", "sub-answers": [["Yes", "No"], ["Yes", "Yes", "Yes"]]},
    )
    res = validate_strand(d, on_invalid="keep-as-wrong")
    read = res.statistics["read"]
    assert (read["videos"], read["sources"], read["targets"], read["subs"]) == (2, 2, 4, 9)
    assert read["subs_per_target"] == 2.25 and read["subs_per_target_histogram"] == {"2": 3, "3": 1}
    assert (read["subs_per_target_min"], read["subs_per_target_max"]) == (2, 3)
    assert (read["target_yes"], read["target_no"], read["target_not_yes_no"]) == (2, 1, 1)
    assert read["target_yes_share"] == pytest.approx(2 / 3)  # over Yes/No answers, as the release counts
    # the three sub-answers of a mis-paired list (2 questions, 3 answers) are not counted as Yes or No
    assert (read["sub_yes"], read["sub_no"], read["sub_not_yes_no"], read["sub_yes_share"]) == (5, 1, 3, 5 / 6)
    # always-Yes: sample_0001 t0 (all Yes); sample_0002 t0 has a No sub; t1 of both are No/NA or mis-paired
    assert read["always_yes_a_faith"] == pytest.approx(1 / 4)
    assert res.statistics["paper"]["targets"] == 977 and res.statistics["paper"]["subs_per_target"] == 2.58
    drop = validate_strand(d)
    assert drop.statistics["kept"]["targets"] == 2 and drop.statistics["read"] == read
    v = json.loads(json.dumps(res.to_json()))
    assert v["statistics"]["kept"]["targets"] == 4


def test_keep_as_wrong_counts_an_affected_target_by_its_own_answer(tmp_path: Path) -> None:
    """The report's Yes share under keep-as-wrong is the release's (Yes / (Yes + No) over the answers as
    written), not Yes over every target with the kept-as-wrong ones counted as neither."""
    from vidaudit.core.contract.records import ScoreRecord
    from vidaudit.suites.faithful.aggregate import aggregate

    d = tmp_path / "rel"
    # target 0 is Yes but has an NA sub-question (kept as wrong); target 1 is No; target 2's answer is NA
    _write(
        d,
        "sample_0001.json",
        {
            **GOOD,
            "questions": GOOD["questions"] + ["Is the keeper tall?"],
            "answers": ["Yes", "No", "NA"],
            "sub-questions": GOOD["sub-questions"] + [["Is there a keeper?"]],
            "sub-answers": [["Yes", "NA"], ["Yes", "Yes"], ["Yes"]],
        },
    )
    res = import_strand(d, tmp_path / "out", on_invalid="keep-as-wrong")
    samples = {s.sample_id: s for s in res.samples}
    recs = [
        ScoreRecord(
            trial_id=f"t{i}",
            sample_id=sid,
            suite="faithful",
            model="chance",
            model_role="chance",
            condition="frames@1",
            group_id="g",
            status="ok",
            correct=False,
        )
        for i, sid in enumerate(samples)
    ]
    bal = aggregate(recs, samples, n_boot=10)["dataset"]["balance"]["target"]
    assert (bal["n"], bal["yes"], bal["no"], bal["invalid"], bal["kept_as_wrong"]) == (3, 1, 1, 1, 1)
    assert bal["yes_share"] == 0.5


def test_the_commands_print_the_statistics_beside_the_paper(tmp_path: Path) -> None:
    app = typer.Typer()

    @app.command()
    def version() -> None:
        pass

    register_extra_commands(app)
    d = tmp_path / "rel"
    _write(d, "sample_0001.json", {**GOOD, "answers": ["Yes", "NA"]})
    r = CliRunner().invoke(app, ["validate", "strand", str(d), "--on-invalid", "keep-as-wrong"])
    assert r.exit_code == 0, r.output

    def row(label: str) -> list[str]:
        return next(ln.split()[-3:] for ln in r.output.splitlines() if ln.strip().startswith(label + " "))

    assert row("subs per target") == ["2.00", "2.00", "2.58"]
    assert row("target Yes share") == ["100.0%", "100.0%", "50.8%"]  # the paper prints 50.8 for 497 of 977
    assert row("always-Yes A_faith") == ["50.0%", "50.0%", "19.1%"]
