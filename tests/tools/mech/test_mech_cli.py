"""Every probe end to end through the CLI on a tiny random model and the stress camera clips (cka on the
wireframe stimuli), the report's mechanism section, bad input, cka of identical conditions, the Conv3D
slices of a kernel set in the test, and the same command on a real 7B model when a GPU is available."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("torch", reason="hf extra (torch) not installed")
pytest.importorskip("transformers", reason="hf extra (transformers) not installed")

from vidaudit.cli import app  # noqa: E402
from vidaudit.core.contract.report import Report  # noqa: E402

runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mech_cli")
    r = cli("generate", "stress", "--probe", "camera_motion", "--out", str(root / "data"))
    assert r.exit_code == 0, r.output
    r = cli("generate", "stress", "--probe", "wireframe", "--out", str(root / "wf"))
    assert r.exit_code == 0, r.output
    r = cli("tiny-model", "Qwen2.5-VL", "--out", str(root / "tiny"))
    assert r.exit_code == 0, r.output
    assert (root / "tiny" / "config.json").is_file() and (root / "tiny" / "processor_config.json").exists()
    return root


def probe(root: Path, name: str, *extra: str, out: str = "run/mechanism", data: str = "data"):
    return cli(
        "probe",
        name,
        "--model",
        f"hf:{root / 'tiny'}",
        "--data",
        str(root / data),
        "--out",
        str(root / out),
        "--frames",
        "4",
        *extra,
    )


def read(root: Path, name: str, out: str = "run/mechanism") -> dict:
    assert (root / out / f"{name}.svg").read_text().startswith("<svg")
    return json.loads((root / out / f"{name}.json").read_text())


def test_linear_probe_camera_and_direction_with_a_feature_cache(root):
    r = probe(root, "linear", "--epochs", "2")
    assert r.exit_code == 0, r.output
    d = read(root, "linear")
    assert d["task"] == "camera" and d["chance"] == 0.25 and d["n_items"] == 8  # 4 classes x 2 scenes
    assert d["stages"] == ["encoder", "projector", "llm0", "llm1"] and d["cache"]["misses"] == 8
    assert all(len(v["accs"]) == 3 and 0 <= v["mean"] <= 1 for v in d["results"].values())
    assert probe(root, "linear", "--epochs", "2").exit_code == 0
    assert read(root, "linear")["cache"] == {"hits": 8, "misses": 0}  # re-training never re-runs the model
    r = probe(root, "linear", "--task", "direction", "--limit", "7", "--epochs", "2", out="dir")  # 2 scenes
    assert r.exit_code == 0, r.output
    d = read(root, "linear", out="dir")
    assert d["task"] == "direction" and d["n_items"] == 14 and d["chance"] == 0.5


def test_attention_kl_cka_and_partition_probes(root):
    assert probe(root, "attention", "--limit", "2").exit_code == 0
    a = read(root, "attention")
    assert len(a["delta"]) == 2 and len(a["norm_ratio"]) == 3
    for cond in ("neutral", "pressured"):
        total = sum(a["alpha"][cond][s][0] for s in ("system", "video", "prompt", "other"))
        assert total == pytest.approx(1.0, abs=1e-4)  # the spans cover the row
    assert probe(root, "kl", "--limit", "1").exit_code == 0
    k = read(root, "kl")
    assert k["log_base"].startswith("e") and set(k["kl_real_blank"]) == {"neutral", "weak", "strong", "assertive"}
    assert all(v >= 0 for v in k["kl_real_noise"].values())
    r = cli(
        "probe",
        "cka",
        "--model",
        f"hf:{root / 'tiny'}",
        "--data",
        str(root / "wf"),
        "--out",
        str(root / "run/mechanism"),
        "--limit",
        "5",
    )  # no --frames: cka sends the stimulus' 4 frames
    assert r.exit_code == 0, r.output
    c = read(root, "cka")
    assert c["n_pairs"] == 2 and c["frames_sent"] == [4] and c["unpaired"] == []  # scenes 1-2 of the smoke set
    assert c["pairs"][0]["control"].endswith("-control-w1-s0") and c["pairs"][0]["adversarial"].endswith(
        "-adversarial-w1-s0"
    )
    assert c["cka"]["control"]["vit"] == pytest.approx([1.0, 1.0], abs=1e-4)  # four identical copies (codec)
    assert all(v < 0.99 for v in c["cka"]["adversarial"]["vit"])  # the halves differ
    assert all(0 <= v < 0.9 for v in c["control_vs_adversarial"]["vit"] + c["control_vs_adversarial"]["llm"])
    assert [(r["stage"], r["layer"]) for r in c["curve"]] == [("vit", 0), ("vit", 1), ("llm", 0), ("llm", 1)]
    assert c["reference"]["adversarial"]["15"] == 0.924 and c["reference_aligned"] is False
    assert all(r["paper_adversarial"] is None for r in c["curve"])  # a 2-block tower: nothing beside
    assert probe(root, "encoder-partition", "--limit", "2").exit_code == 0
    p = read(root, "encoder-partition")
    windowed, full = p["blocks"]
    assert not windowed["full_attention"] and full["full_attention"]
    assert full["segments"] == p["temporal_groups"] and windowed["segments"] > full["segments"]
    assert all(b["cross_frame_mass"] == 0.0 for b in p["blocks"])  # read from the model's chunks
    assert p["merger"]["tokens_out"] * 4 == p["merger"]["patches_in"]
    conv = p["conv3d"]
    assert conv["shape"] == [32, 3, 2, 8, 8] and len(conv["channel_slice_cosine"]["per_channel"]) == 32
    assert conv["temporal_rank"]["max_rank"] == 32 and 0 < conv["temporal_rank"]["rank_99"] <= 32


def test_the_report_shows_a_mechanism_section(root):
    if not (root / "run/mechanism/kl.json").exists():  # run alone: make the probe outputs first
        test_attention_kl_cka_and_partition_probes(root)
    r = cli(
        "run",
        "stress",
        "--data",
        str(root / "data"),
        "--model",
        "oracle",
        "--condition",
        "frames@4",
        "--out",
        str(root / "run"),
    )
    assert r.exit_code == 0, r.output
    assert cli("report", str(root / "run")).exit_code == 0
    rep = Report.model_validate_json((root / "run" / "report" / "report.json").read_text())
    mech = [s for s in rep.sections if s.id == "mechanism"]
    assert mech and {f.id for f in mech[0].figures} >= {"mech-kl", "mech-attention", "mech-cka", "mech-partition"}
    assert "Mechanism" in (root / "run" / "report" / "report.md").read_text()
    cka = next(t for t in mech[0].tables if t.id == "mech-cka")
    assert (
        cka.columns[-1] == "paper adversarial"
        and ["paper: vision block 15 of 32", "1.000", "0.924", "", ""] in cka.rows
        and cka.rows[0][0] == "vision block 0"
    )


def test_bad_input_is_named(root):
    r = probe(root, "linear", "--limit", "3")
    assert r.exit_code != 0 and "missing" in r.output and "pan_right" in r.output
    r = probe(root, "linear", "--task", "direction", "--limit", "1")
    assert r.exit_code != 0 and "at least 2 clips" in r.output
    r = probe(root, "linear", "--task", "direction", "--limit", "2")
    assert r.exit_code != 0 and "at least 2 groups" in r.output
    r = probe(root, "linear", "--layers", "5")
    assert r.exit_code != 0 and "LLM layer 5 is out of range" in r.output
    r = cli("probe", "kl", "--model", "openai:gpt-4o", "--data", str(root / "data"), "--out", str(root / "x"))
    assert r.exit_code != 0 and "hf:PATH" in r.output
    r = cli("probe", "nope", "--model", f"hf:{root / 'tiny'}", "--data", str(root / "data"), "--out", str(root / "x"))
    assert r.exit_code != 0 and "unknown probe" in r.output
    r = probe(root, "cka", "--limit", "2", out="x")  # camera clips: no arrangements
    assert r.exit_code != 0 and "params.arrangement" in r.output and "--probe wireframe" in r.output
    r = probe(root, "cka", "--limit", "1", out="x", data="wf")  # a control with no adversarial
    assert r.exit_code != 0 and "no scene has both a control and an adversarial" in r.output
    assert "-control-w1-s0" in r.output
    r = cli("tiny-model", "gpt2", "--out", str(root / "t2"))
    assert r.exit_code != 0 and "no tiny-model builder" in r.output
    assert not (root / "x").exists()


def test_cka_of_identical_conditions_is_one_at_every_layer(root):
    from vidaudit.tools.mech import data as pdata
    from vidaudit.tools.mech.probe_cka import pair_cka
    from vidaudit.tools.mech.whitebox import WhiteBox

    wb = WhiteBox(str(root / "tiny"))
    control = pdata.load_clips(root / "wf", limit=1)[0]
    res = pair_cka(wb, control, control)  # Control vs Control
    assert res["between"]["vit"] == pytest.approx([1.0, 1.0]) and res["between"]["llm"] == pytest.approx([1.0, 1.0])
    assert res["first"] == res["second"]


def test_conv3d_slices_are_read_from_the_models_weights(root):
    import torch

    from vidaudit.tools.mech import data as pdata
    from vidaudit.tools.mech import probe_partition
    from vidaudit.tools.mech.whitebox import WhiteBox

    wb = WhiteBox(str(root / "tiny"))
    clips = pdata.load_clips(root / "wf", limit=1)
    w = wb.visual.patch_embed.proj.weight
    expect = torch.nn.functional.cosine_similarity(w[:, :, 0].flatten(1), w[:, :, 1].flatten(1), dim=1)
    got = probe_partition.run(wb, clips, frames=4)[0]["conv3d"]
    assert got["channel_slice_cosine"]["per_channel"] == pytest.approx(expect.tolist(), abs=1e-6)
    with torch.no_grad():
        w[:, :, 1] = w[:, :, 0]  # two equal temporal slices
    got = probe_partition.run(wb, clips, frames=4)[0]["conv3d"]
    assert got["slice_cosine"] == pytest.approx([1.0])
    assert got["channel_slice_cosine"]["min"] == pytest.approx(1.0)
    assert got["temporal_energy"] == 0.0 and got["channel_sensitivity"]["max"] == 0.0
    assert got["temporal_rank"]["matrix_rank"] == 0


SEVEN_B = os.environ.get("VIDAUDIT_7B_MODEL", "Qwen/Qwen2.5-VL-7B-Instruct")


def test_real_7b_model_on_gpu(root):
    import torch

    if not torch.cuda.is_available():
        pytest.skip(
            "no CUDA GPU: the 7B probe (VIDAUDIT_7B_MODEL, default Qwen/Qwen2.5-VL-7B-Instruct, from the "
            "local cache) runs only where a GPU is available"
        )
    r = cli(
        "probe",
        "encoder-partition",
        "--model",
        f"hf:{SEVEN_B}",
        "--data",
        str(root / "data"),
        "--out",
        str(root / "gpu"),
        "--frames",
        "4",
        "--limit",
        "2",
        "--device",
        "cuda",
        "--dtype",
        "bfloat16",
    )
    assert r.exit_code == 0, r.output
    assert read(root, "encoder-partition", out="gpu")["blocks"]
