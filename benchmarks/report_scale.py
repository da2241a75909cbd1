"""The counting report at the paper's scale: page size, time to interactive in Chromium, peak memory.

For 1 and 2 models x 12 conditions x the 2,190 samples of the paper grid (26,280 / 52,560 trials),
synthetic ledger responses (those of ``scoring.py``) are scored into ScoreRecords as the score
stage does (``vidaudit.score.stage.record``), aggregated through the counting suite
(``build_report``), turned into viewer trials, selected, given 24 JPEG thumbnails each (drawn
once per distinct frame, a fresh string per trial as the report stage makes them) and written
with ``write_report``. No model is called and no video decoded.

Each build runs in a fresh process so its peak resident memory (VmHWM) is its own. Two layouts,
side by side on the same trials:

- ``inline``: every trial's details in the page (the previous implementation; ``write_report``
  with ``inline_max_bytes=inf`` writes the page it wrote, one status line of the viewer aside);
- ``chunked``: the current default, an index in the page and details in ``viewer/NNN.js``.

Then headless Chromium (/usr/bin/chromium) opens each page from file://: time to interactive is
from navigation until the list is drawn and the first trial's details are shown; then the last
trial of the list (in the last side file) is opened by clicking it.

    python benchmarks/report_scale.py [--models 1,2] [--layouts inline,chunked] [--keep DIR]

``--demo RUN`` first measures ``vidaudit report`` on a demo run (``vidaudit demo``'s ``out/demo/run``), before
and after, side by side in this one invocation: the sources of ``--before`` (a git revision, default
2ec6b12: the report re-scored the store and drew matplotlib PNGs) exported with ``git archive`` and this
checkout's, each run as ``python -m vidaudit.cli report`` in a fresh process on its own copy of the run,
alternating, ``--repeats`` times; the CPU is the child's user + system time (``os.wait4``), the load
average is printed beside it. After: ``vidaudit score`` once, then ``report`` (reads scored_run.jsonl);
also ``report --rescore`` and ``report --figures png``. ``--no-paper`` skips the paper-scale builds.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_common import vm_hwm_mib

CONDITIONS = [
    "native",
    "frames@1",
    "frames@2",
    "frames@4",
    "frames@8",
    "frames@10",
    "frames@16",
    "keyframes",
    "native+prompt:direct",
    "native+prompt:cot",
    "native+prompt:ledger_free",
    "native+prompt:brief",
]
MODELS = ["bench-model-a", "bench-model-b"]
CHROMIUM = Path("/usr/bin/chromium")


def _thumbnails(n: int) -> list[str]:
    """n distinct JPEG thumbnails of 854x480 frames with a ball and a clock, as the viewer stores them."""
    import cv2
    import numpy as np

    from vidaudit.report.viewer import thumbnail_jpeg_b64

    out = []
    for i in range(n):
        img = np.full((480, 854, 3), 30, np.uint8)
        cv2.rectangle(img, (20, 20), (834, 460), (200, 200, 200), 3)
        x, y = 60 + (i * 37) % 734, 60 + (i * 53) % 360
        cv2.circle(img, (x, y), 28, (230, 80, 40), -1, lineType=cv2.LINE_AA)
        cv2.putText(img, f"t={i / 30:.2f}s", (30, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (255, 255, 255), 2, cv2.LINE_AA)
        out.append(thumbnail_jpeg_b64(img))
    return out


def build(n_models: int, layout: str, out: Path) -> dict:
    """One report, timed by stage, in this (fresh) process."""
    sys.path.insert(0, str(Path(__file__).parent))
    from scoring import make_response, make_sample

    from vidaudit.core.registry import get_suite
    from vidaudit.report import write as _w
    from vidaudit.report.stage import build_report
    from vidaudit.report.viewer import MAX_FRAMES_PER_TRIAL, select_trials_for_viewer

    write_report = _w.write_report
    from vidaudit.core.contract.report import ViewerFrame
    from vidaudit.score.scored_run import Scored
    from vidaudit.score.stage import record
    from vidaudit.suites.counting.grid import grid

    suite = get_suite("counting")
    times: dict[str, float] = {}
    t0 = time.perf_counter()
    samples = {s.sample_id: s for s in (make_sample(p.domain, p.n_events, p.frequency_hz, p.seed) for p in grid())}
    records, raw = [], {}
    for mi, model in enumerate(MODELS[:n_models]):
        for ci, cond in enumerate(CONDITIONS):
            for s in samples.values():
                text = make_response(s, mi * len(CONDITIONS) + ci)
                tid = f"{model}|{cond}|{s.sample_id}"
                raw[tid] = text
                records.append(
                    record(
                        suite,
                        s,
                        trial_id=tid,
                        model=model,
                        role="model",
                        condition=cond,
                        status="ok",
                        text=text,
                        usage={"input_tokens": 1000, "output_tokens": 200},
                        cost_usd=0.001,
                    )
                )
    times["score"] = time.perf_counter() - t0
    scored = Scored(suite=suite, records=records, samples=samples, raw_text=raw, source={"run_dir": "bench"})
    t0 = time.perf_counter()
    report = build_report(scored)
    times["aggregate"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    items = [suite.viewer_trial(r, samples[r.sample_id], raw.get(r.trial_id)) for r in records]
    chosen = select_trials_for_viewer(items)
    del items
    pool = _thumbnails(240)
    trials = []
    for k, t in enumerate(chosen):
        dur = samples[t.sample_id].video.duration_s
        frames = [
            ViewerFrame(
                index=i * 30, t=i * dur / MAX_FRAMES_PER_TRIAL, jpeg_b64=(pool[(k * 7 + i) % len(pool)] + " ")[:-1]
            )  # a new string, as made per trial
            for i in range(MAX_FRAMES_PER_TRIAL)
        ]
        trials.append(t.model_copy(update={"frames": frames}))
    times["viewer trials"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    kw = {"inline_max_bytes": float("inf")} if layout == "inline" else {}
    paths = write_report(report, trials, suite.viewer, out, n_trials_total=len(records), **kw)
    times["write"] = time.perf_counter() - t0
    side = sorted(paths["viewer"].iterdir()) if "viewer" in paths else []
    return {
        "trials": len(records),
        "kept": len(trials),
        "times": times,
        "hwm_mib": vm_hwm_mib(),
        "html_bytes": paths["html"].stat().st_size,
        "json_bytes": paths["json"].stat().st_size,
        "side_files": len(side),
        "side_bytes": sum(p.stat().st_size for p in side),
        "largest_side": max((p.stat().st_size for p in side), default=0),
        "html": str(paths["html"]),
        "last_trial": trials[-1].trial_id,
        "first_trial": trials[0].trial_id,
    }


def browse(html: Path, first: str, last: str) -> dict:
    """Time to interactive and time to open the last trial, in headless Chromium from file://."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
        )
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:")) else r.abort())
            t0 = time.perf_counter()
            page.goto(html.resolve().as_uri(), wait_until="load", timeout=600_000)
            page.wait_for_selector(f'#detail-body[data-trial-id="{first}"]', state="attached", timeout=600_000)
            tti = time.perf_counter() - t0
            rows = page.locator("#trial-rows tr").count()
            t0 = time.perf_counter()
            page.click(f'#trial-rows tr[data-trial-id="{last}"]', timeout=600_000)
            page.wait_for_selector(f'#detail-body[data-trial-id="{last}"]', state="attached", timeout=600_000)
            t_last = time.perf_counter() - t0
            thumbs = page.eval_on_selector_all("#frame-strip img", "imgs => imgs.length")
            status = page.inner_text("#detail-status") if page.is_visible("#detail-status") else ""
        finally:
            browser.close()
    return {"tti_s": tti, "rows": rows, "open_last_s": t_last, "thumbs": thumbs, "errors": errors, "status": status}


REPO = Path(__file__).resolve().parents[1]


def _child_cpu(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one command in a fresh process: the child's user + system time."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{out.decode(errors='replace')[-3000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def demo_before_after(run: Path, before: str, repeats: int, root: Path) -> None:
    """``vidaudit report`` on the demo run: the sources at ``before`` against this checkout's, alternating."""
    import shutil
    import statistics

    if not (run / "run.json").is_file():
        raise SystemExit(f"--demo {run}: no run.json there; make one with `vidaudit demo --out out/demo`")
    old_src = root / "before"
    old_src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", before, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(old_src)], input=archive.stdout, check=True)
    runs = {k: root / f"demo-{k}" for k in ("before", "after")}
    for dst in runs.values():
        shutil.copytree(run, dst, ignore=shutil.ignore_patterns("report", ".lock", "scores.jsonl", "scored_run.jsonl"))
    env_old = {**os.environ, "PYTHONPATH": str(old_src / "src")}
    env_new = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cli = [sys.executable, "-m", "vidaudit.cli"]
    score_cpu, score_wall = _child_cpu([*cli, "score", str(runs["after"])], env_new, REPO)
    cases = {
        f"before ({before}): report (scores the store, PNG figures)": ([*cli, "report", str(runs["before"])], env_old),
        "after: report (reads scored_run.jsonl, SVG figures)": ([*cli, "report", str(runs["after"])], env_new),
        "after: report --rescore": ([*cli, "report", str(runs["after"]), "--rescore"], env_new),
        "after: report --figures png": ([*cli, "report", str(runs["after"]), "--figures", "png"], env_new),
    }
    got: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    loads = [os.getloadavg()[0]]
    for _ in range(repeats):
        for name, (cmd, env) in cases.items():
            got[name].append(_child_cpu(cmd, env, REPO))
            loads.append(os.getloadavg()[0])
    print(
        f"demo report, {repeats} runs each, alternating; load average (1 min) {min(loads):.1f}-{max(loads):.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    print(f"{'':62} {'CPU s (median, min)':>20} {'wall s (median)':>16}")
    print(f"{'after: vidaudit score (once, beside the report)':62} {score_cpu:>13.2f} {'':>6} {score_wall:>16.2f}")
    for name, xs in got.items():
        cpu = [c for c, _ in xs]
        print(
            f"{name:62} {statistics.median(cpu):>13.2f} {min(cpu):>6.2f} {statistics.median(w for _, w in xs):>16.2f}"
        )
    b = statistics.median(c for c, _ in got[next(iter(cases))])
    a = statistics.median(c for c, _ in got["after: report (reads scored_run.jsonl, SVG figures)"])
    print(f"report CPU before / after: {b:.2f} / {a:.2f} s ({b / a:.1f}x); goal < 6 s: {'met' if a < 6 else 'NOT met'}")
    print()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="1,2", help="comma-separated model counts (26,280 trials per model)")
    ap.add_argument("--layouts", default="inline,chunked")
    ap.add_argument("--keep", type=Path, help="write the reports here (default: a temporary folder)")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--demo", type=Path, help="a demo run dir: time `vidaudit report` on it before and after first")
    ap.add_argument("--before", default="2ec6b12", help="the git revision of 'before' for --demo")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each --demo case")
    ap.add_argument("--no-paper", action="store_true", help="skip the paper-scale builds")
    ap.add_argument("--child", nargs=3, metavar=("MODELS", "LAYOUT", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(build(int(args.child[0]), args.child[1], Path(args.child[2]))))
        return
    models = [int(x) for x in args.models.split(",")]
    layouts = args.layouts.split(",")
    if not set(layouts) <= {"inline", "chunked"} or not all(1 <= m <= len(MODELS) for m in models):
        raise SystemExit("--layouts takes inline and/or chunked; --models takes 1 and/or 2")
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, Chromium {CHROMIUM}; "
        f"load average at start {' / '.join(f'{x:.1f}' for x in os.getloadavg())} (1/5/15 min)"
    )
    root = args.keep or Path(tempfile.mkdtemp(prefix="report-scale-"))
    if args.demo:
        demo_before_after(args.demo.resolve(), args.before, args.repeats, root)
    if args.no_paper:
        return
    rows = []
    for m in models:
        for layout in layouts:
            out = root / f"{m}model-{layout}"
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(m), layout, str(out)],
                capture_output=True,
                text=True,
                env=os.environ,
            )
            if proc.returncode:
                raise SystemExit(f"build {m} model(s) {layout} failed:\n{proc.stderr[-3000:]}")
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            if not args.no_browser:
                res.update(browse(Path(res["html"]), res["first_trial"], res["last_trial"]))
            rows.append((m, layout, res))
            t = res["times"]
            print(
                f"{m} model(s), {layout:<7}: {res['trials']} trials, {res['kept']} in the viewer; "
                f"score {t['score']:.1f} s, report {t['aggregate']:.1f} s, viewer trials "
                f"{t['viewer trials']:.1f} s, write {t['write']:.1f} s; peak RSS {res['hwm_mib']:.0f} MiB; "
                f"html {res['html_bytes'] / 1e6:.1f} MB; TTI {res.get('tti_s', float('nan')):.2f} s; "
                f"load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    print()
    print(
        f"{'trials':>7} {'layout':<8} {'html MB':>8} {'side files':>10} {'side MB':>8} {'json MB':>8} "
        f"{'TTI s':>7} {'open last s':>11} {'rows':>5} {'thumbs':>6} {'peak RSS MiB':>12} {'write s':>7}"
    )
    for m, layout, r in rows:
        print(
            f"{r['trials']:>7} {layout:<8} {r['html_bytes'] / 1e6:8.1f} {r['side_files']:>10} "
            f"{r['side_bytes'] / 1e6:8.1f} {r['json_bytes'] / 1e6:8.1f} {r.get('tti_s', float('nan')):7.2f} "
            f"{r.get('open_last_s', float('nan')):11.2f} {r.get('rows', 0):>5} {r.get('thumbs', 0):>6} "
            f"{r['hwm_mib']:12.0f} {r['times']['write']:7.1f}"
        )
        if r.get("errors") or r.get("status"):
            print(f"        page errors: {r.get('errors')} status: {r.get('status')!r}")
    by = {(m, lay): r for m, lay, r in rows}
    for m in models:
        a, b = by.get((m, "inline")), by.get((m, "chunked"))
        if a and b and "tti_s" in a and "tti_s" in b:
            print(
                f"{m} model(s): page size inline / chunked {a['html_bytes'] / b['html_bytes']:.1f}x, "
                f"time to interactive {a['tti_s'] / b['tti_s']:.1f}x, peak RSS {a['hwm_mib'] / b['hwm_mib']:.2f}x"
            )
    for m, layout, r in rows:
        if layout == "chunked":
            ok = r["html_bytes"] < 25e6 and r.get("tti_s", 0) < 5 and r["hwm_mib"] < 2048
            print(
                f"goal at {r['trials']} trials (html < 25 MB, interactive < 5 s, peak RSS < 2 GB): "
                f"{'met' if ok else 'NOT met'}"
            )
    print(f"load average at end: {os.getloadavg()[0]:.2f} (1 min); reports in {root}")


if __name__ == "__main__":
    main()
