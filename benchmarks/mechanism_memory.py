"""Memory of a probe's feature extraction: streamed to the disk cache vs every clip's view held, on a tiny model.

Part 1 (measured): the tiny Qwen2.5-VL (``vidaudit tiny-model``) over N synthetic clips, first streaming
(each clip's pooled features written to the FeatureCache, the view dropped), then the baseline that keeps
every clip's full ClipView; peak RSS growth of each and the ratio. Part 2 (estimated, no GPU here): a
probe over 1,000 clips of Qwen2.5-VL-7B from the streaming design's arithmetic.

    PYTHONPATH=src python benchmarks/mechanism_memory.py --clips 24
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clips", type=int, default=24)
    ap.add_argument("--size", type=int, default=64)
    args = ap.parse_args()
    from vidaudit.tools.mech import data as pdata
    from vidaudit.tools.mech.featcache import FeatureCache
    from vidaudit.tools.mech.probe_linear import pooled
    from vidaudit.tools.mech.tiny import build_tiny
    from vidaudit.tools.mech.whitebox import Want, WhiteBox
    from vidaudit.video.encode import write_video

    root = Path(tempfile.mkdtemp(prefix="mechbench."))
    model = build_tiny("qwen2_5_vl", root / "tiny")
    rng = np.random.default_rng(0)
    clips = []
    for i in range(args.clips):
        p = root / f"c{i}.mp4"
        write_video(
            p,
            (rng.integers(0, 256, (args.size, args.size, 3), dtype=np.uint8) for _ in range(16)),
            8.0,
            args.size,
            args.size,
        )
        clips.append(pdata.Clip(f"c{i}", p, f"{i:064x}", 8.0, 16, 2.0, f"c{i}", {}))
    wb = WhiteBox(str(model))
    want = Want(encoder=True, projector=True, llm_layers=(0, 1), vit_layers=(0, 1), attention=True)
    wb.view(pdata.request(clips[0], "warm up"), want)
    print(f"machine: {os.cpu_count()} CPUs; load average at start {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    cache = FeatureCache(root / "features")
    base = rss_mb()
    t0 = time.perf_counter()
    peak_stream = 0.0
    for c in clips:
        cache.put(c.clip_id, pooled(wb.view(pdata.request(c, "Describe it."), want), (0, 1)))
        peak_stream = max(peak_stream, rss_mb() - base)
    t_stream = time.perf_counter() - t0
    per_clip = sum(f.stat().st_size for f in (root / "features").iterdir()) / len(clips)
    held = []
    base2 = rss_mb()
    peak_held = 0.0
    for c in clips:
        held.append(wb.view(pdata.request(c, "Describe it."), want))
        peak_held = max(peak_held, rss_mb() - base2)
    print(f"1. tiny qwen2_5_vl, {len(clips)} clips of {args.size}x{args.size}, 8 frames sent")
    print(
        f"   streamed to the feature cache: RSS growth {peak_stream:7.2f} MiB; {t_stream / len(clips) * 1e3:.0f} ms "
        f"per clip; {per_clip / 1024:.1f} KiB on disk per clip"
    )
    print(f"   every ClipView held:           RSS growth {peak_held:7.2f} MiB")
    print(
        f"   ratio held / streamed: {peak_held / max(peak_stream, 0.01):.1f}x "
        f"(max RSS of the process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB)"
    )
    # Part 2: arithmetic for Qwen2.5-VL-7B (ViT 32 x 1280, LLM 28 x 3584, vocab 152,064), 16 frames at 448x448
    params_b, vit_d, llm_d, llm_layers, vocab = 8.29e9, 1280, 3584, 28, 152064
    groups, patches, tokens = 8, 8 * 1024, 8 * 256
    seq = tokens + 100
    gpu = {
        "weights (bf16)": params_b * 2,
        "all LLM hidden states kept by output_hidden_states (bf16)": (llm_layers + 1) * seq * llm_d * 2,
        "one vision chunk's softmax rows in the capture (fp32, full-attention block)": 16 * 1024**2 * 4,
        "MLP intermediate of one layer (bf16)": seq * 18944 * 2,
        "first-step logits (logits_to_keep=1, fp32)": vocab * 4,
    }
    host_clip = (groups * vit_d + groups * llm_d + 4 * llm_d) * 4
    print(
        "2. ESTIMATE (no GPU measured): Qwen2.5-VL-7B, 16 frames at 448x448 "
        f"({patches} patches, {tokens} visual tokens), batch 1, 1,000 clips"
    )
    for k, v in gpu.items():
        print(f"   GPU  {k:78s} {v / 2**30:7.2f} GiB")
    print(
        f"   GPU  peak, sum of the above                                                         "
        f"{sum(gpu.values()) / 2**30:7.2f} GiB (budget 80)"
    )
    print(
        f"   host model load (from_pretrained on CPU, then .to(cuda))                             "
        f"{params_b * 2 / 2**30:7.2f} GiB (budget 24)"
    )
    print(
        f"   host linear features per clip (encoder + projector + 4 LLM layers, fp32)              "
        f"{host_clip / 2**10:7.1f} KiB; 2,000 items (1,000 pairs) on disk {2000 * host_clip / 2**20:.0f} MiB, "
        f"largest stage matrix in memory {2000 * groups * llm_d * 4 / 2**20:.0f} MiB"
    )


if __name__ == "__main__":
    main()
