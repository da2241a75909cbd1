"""A viewer too big for one page: an index in report.html, trial details in viewer/NNN.js side files.

Without a browser: the split keeps every trial exactly once and in order, the page holds no
trial's text, the folder is replaced whole and removed when a later report fits in the page, and
a folder of someone else's files is refused before anything is written. In headless Chromium
(from file://, no server): a report of 600 trials over many side files lists them all, opens a
trial from the last file, refuses a side file from another report and names a missing one.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from browser import CHROMIUM, LAUNCH_ARGS, require_browser
from test_report_html import MALICIOUS
from vidaudit.core.contract.report import (
    EventTimeline,
    Report,
    TimelineEvent,
    ViewerColumn,
    ViewerFrame,
    ViewerSpec,
    ViewerTrial,
)
from vidaudit.core.errors import DataError
from vidaudit.report.viewer import thumbnail_jpeg_b64, viewer_payload
from vidaudit.report.viewer_files import CALLBACK, VIEWER_DIR, resolve_thumbnails, viewer_data
from vidaudit.report.write import write_report

SPEC = ViewerSpec(group_label="domain", columns=[ViewerColumn(key="n", label="N", numeric=True)])
_THUMBS: list[str] = []


def _thumbs() -> list[str]:
    if not _THUMBS:
        for i in range(4):
            img = np.full((90, 160, 3), 40 * i, np.uint8)
            img[30:60, 20 + 30 * i : 50 + 30 * i] = (250, 60, 60)
            _THUMBS.append(thumbnail_jpeg_b64(img, width=64))
    return _THUMBS


def trial(i: int, n_frames: int = 3, text: str = "") -> ViewerTrial:
    events = [TimelineEvent(t=1.0 + k, label=f"e{k}") for k in range(1 + i % 3)]
    return ViewerTrial(
        trial_id=f"t{i:04d}",
        sample_id=f"s{i}",
        model=("m-a", "m-b")[i % 2],
        condition=f"c{i % 3}",
        group=("bounce_ball", "blinking")[i % 2],
        status="ok" if i % 11 else "api_error",
        correct=(i % 4 == 0) if i % 11 else None,
        columns={"n": i % 7},
        facts=[("answer", str(i % 7))],
        timeline=EventTimeline(
            duration_s=6.0, true_events=events, reported_events=events[:1], matches=[(0, 0)], window_s=0.25
        ),
        frames=[ViewerFrame(index=k, t=0.5 * k, jpeg_b64=_thumbs()[k % 4]) for k in range(n_frames)],
        raw_text=text or f"trial {i} says \\boxed{{{i % 7}}}",
        grid_point=[i % 7],
    )


def report() -> Report:
    return Report(suite="counting", vidaudit_version="0", created_at="2026-01-01T00:00:00Z", models=["m-a", "m-b"])


def chunk_trials(text: str) -> tuple[str, int, list[dict]]:
    m = re.fullmatch(CALLBACK + r'\("([0-9a-f]+)",(\d+),(\[.*\])\);\n', text, re.S)
    assert m, text[:80]
    return m.group(1), int(m.group(2)), json.loads(m.group(3))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=40), st.integers(1, 6000))
def test_split_keeps_every_trial_once_in_order(frames, chunk_bytes):
    trials = [trial(i, n) for i, n in enumerate(frames)]
    data = viewer_data(trials, SPEC, inline_max_bytes=0 if trials else 10, chunk_bytes=chunk_bytes)
    page = json.loads(str(data.data_json))
    assert page["spec"] == SPEC.model_dump(mode="json")
    if not trials:
        assert not data.chunked and page["trials"] == []
        return
    assert data.chunked and page["chunks"] == {"dir": VIEWER_DIR, "count": len(data.chunks), "token": data.token}
    full, index_chunks = [], []
    for n, text in enumerate(data.chunks):
        token, number, items = chunk_trials(text)
        assert (token, number) == (data.token, n) and items
        assert not set("<>&") & set(text)
        full += items
        index_chunks += [n] * len(items)
        assert (
            n == len(data.chunks) - 1
            or sum(len(json.dumps(t, separators=(",", ":"))) for t in items) <= chunk_bytes
            or len(items) == 1
        ), "a side file exceeds its size only to hold one big trial"
    assert full == [json.loads(json.dumps(viewer_payload(t))) for t in trials]
    assert [t["chunk"] for t in page["trials"]] == index_chunks
    assert [t["trial_id"] for t in page["trials"]] == [t.trial_id for t in trials]
    assert all(
        set(t) == {"trial_id", "sample_id", "model", "condition", "group", "status", "correct", "columns", "chunk"}
        for t in page["trials"]
    )


def test_small_viewers_stay_in_the_page(tmp_path):
    trials = [trial(i) for i in range(5)]
    inline = viewer_data(trials, SPEC)
    assert not inline.chunked and inline.token is None
    page = json.loads(str(inline.data_json))  # each distinct thumbnail once; the page's script puts them back
    assert resolve_thumbnails(page) == [json.loads(json.dumps(viewer_payload(t))) for t in trials]
    assert (
        len(page["thumbs"]) == len({f.jpeg_b64 for t in trials for f in t.frames}) < sum(len(t.frames) for t in trials)
    )
    paths = write_report(report(), trials, SPEC, tmp_path)
    assert set(paths) == {"json", "md", "html"} and not (tmp_path / VIEWER_DIR).exists()
    assert "strict-dynamic" not in paths["html"].read_text(encoding="utf-8")


def test_side_files_replaced_whole_removed_when_not_needed_and_never_clobbered(tmp_path):
    many = [trial(i, text=f"{MALICIOUS} {i}") for i in range(60)]
    paths = write_report(report(), many, SPEC, tmp_path, inline_max_bytes=0, chunk_bytes=4000)
    folder = paths["viewer"]
    assert folder == tmp_path / VIEWER_DIR
    first = sorted(p.name for p in folder.iterdir())
    assert first == [f"{n:03d}.js" for n in range(len(first))] and len(first) > 5
    html = html_lib.unescape(paths["html"].read_text(encoding="utf-8"))
    assert (
        "script-src 'sha256-" in html
        and "'strict-dynamic';" in html
        and f"{len(first)} files in <code>viewer/</code>" in html
    )
    assert MALICIOUS not in html and "alert(1)" not in html and _thumbs()[0][:60] not in html
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary file or folder is left"
    # a smaller report into the same folder: fewer side files, none left over from the first
    paths = write_report(report(), many[:20], SPEC, tmp_path, inline_max_bytes=0, chunk_bytes=4000)
    second = sorted(p.name for p in paths["viewer"].iterdir())
    assert len(second) < len(first)
    ids = {t["trial_id"] for p in paths["viewer"].iterdir() for t in chunk_trials(p.read_text("utf-8"))[2]}
    assert ids == {t.trial_id for t in many[:20]}
    # a report that fits its page removes the folder, which the new page would never read
    paths = write_report(report(), many[:2], SPEC, tmp_path)
    assert "viewer" not in paths and not (tmp_path / VIEWER_DIR).exists()
    # someone else's files in viewer/: refused before anything is written
    (tmp_path / VIEWER_DIR).mkdir()
    (tmp_path / VIEWER_DIR / "notes.txt").write_text("mine")
    before = paths["html"].stat().st_mtime_ns
    with pytest.raises(DataError, match="did not write"):
        write_report(report(), many, SPEC, tmp_path, inline_max_bytes=0)
    assert paths["html"].stat().st_mtime_ns == before and (tmp_path / VIEWER_DIR / "notes.txt").is_file()
    with pytest.raises(DataError, match="chunk_bytes"):
        viewer_data(many, SPEC, chunk_bytes=0)


def test_many_trials_in_headless_chromium(tmp_path: Path) -> None:
    require_browser()
    from playwright.sync_api import sync_playwright

    trials = [
        trial(i, n_frames=4, text=f"{MALICIOUS}\n<script>window.__pwned = 1</script> reply {i}") for i in range(600)
    ]
    paths = write_report(
        report(), trials, SPEC, tmp_path / "big", n_trials_total=26280, inline_max_bytes=0, chunk_bytes=40_000
    )
    n_files = len(list(paths["viewer"].iterdir()))
    assert n_files >= 10
    other = write_report(report(), trials[:300], SPEC, tmp_path / "other", inline_max_bytes=0, chunk_bytes=40_000)
    last, late, missing = trials[-1], trials[-150], trials[len(trials) // 2]
    errors: list[str] = []
    requested: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requested.append(r.url))
            page.goto(paths["html"].resolve().as_uri(), wait_until="load")
            # the first trial opens itself once its side file has run
            page.wait_for_selector(f'#detail-body[data-trial-id="{trials[0].trial_id}"]', state="attached")
            assert page.locator("#trial-rows tr").count() == len(trials)
            assert page.inner_text("#f-count") == f"{len(trials)} of {len(trials)} trials"

            page.click(f'#trial-rows tr[data-trial-id="{last.trial_id}"]')
            page.wait_for_selector(f'#detail-body[data-trial-id="{last.trial_id}"]', state="attached")
            assert page.inner_text("#raw-text") == last.raw_text
            assert page.eval_on_selector_all("#frame-strip img", "i => i.map(x => x.naturalWidth)") == [64] * 4
            assert page.locator("#timeline .ev-true").count() == len(last.timeline.true_events)
            assert page.locator("#timeline .match-line").count() == 1
            assert page.locator("#detail-facts dt").first.inner_text() == "answer"
            assert not page.is_visible("#detail-status")
            assert page.evaluate("typeof window.__pwned") == "undefined"

            # filter, then open a late trial through the filtered list
            page.select_option("#f-model", late.model)
            page.select_option("#f-condition", late.condition)
            page.click(f'#trial-rows tr[data-trial-id="{late.trial_id}"]')
            page.wait_for_selector(f'#detail-body[data-trial-id="{late.trial_id}"]', state="attached")
            assert page.inner_text("#raw-text") == late.raw_text
            page.select_option("#f-model", "")
            page.select_option("#f-condition", "")

            loaded = {u.rsplit("/", 1)[-1] for u in requested if f"/{VIEWER_DIR}/" in u}
            assert 2 <= len(loaded) < n_files, "only the side files of the trials opened are read"
            assert all(u.startswith(("file:", "data:")) for u in requested)

            # a side file from another report is refused; a missing one is named
            chunk_of = {
                t["trial_id"]: t["chunk"]
                for t in json.loads(
                    re.search(r'id="trials-data">(.*?)</script>', paths["html"].read_text("utf-8"), re.S).group(1)
                )["trials"]
            }
            n_missing = chunk_of[missing.trial_id]
            stale = next(t for t in trials if chunk_of[t.trial_id] == n_missing - 1)
            (paths["viewer"] / f"{n_missing:03d}.js").unlink()
            (paths["viewer"] / f"{n_missing - 1:03d}.js").write_text(
                (other["viewer"] / f"{n_missing - 1:03d}.js").read_text("utf-8"), "utf-8"
            )
            page.click(f'#trial-rows tr[data-trial-id="{missing.trial_id}"]')
            page.wait_for_selector(f'#detail-body[data-trial-id="{missing.trial_id}"]', state="attached")
            assert f"could not read viewer/{n_missing:03d}.js" in page.inner_text("#detail-status")
            assert page.inner_text("#raw-text") == "" and page.locator("#frame-strip img").count() == 0
            page.click(f'#trial-rows tr[data-trial-id="{stale.trial_id}"]')
            page.wait_for_selector(f'#detail-body[data-trial-id="{stale.trial_id}"]', state="attached")
            assert "belongs to another report" in page.inner_text("#detail-status")
            assert page.inner_text("#raw-text") == ""
            assert errors == [], errors
        finally:
            browser.close()


def _set(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("fail_at", ["write report.html", "rename report.html", "rename viewer"])
def test_a_failure_while_writing_leaves_the_previous_report_set_whole(tmp_path: Path, monkeypatch, fail_at: str):
    """All report files are written together or not at all: a full disk while writing the page (after
    report.json and report.md are on disk), or a rename that fails after others succeeded, leaves the
    previous report.json / .md / .html and viewer/ byte for byte, no temporary file, and a DataError
    naming the folder and the cause."""
    import errno
    import os as os_mod

    from vidaudit.core import fileio

    many = [trial(i, text=f"reply {i}") for i in range(40)]
    write_report(report(), many, SPEC, tmp_path, inline_max_bytes=0, chunk_bytes=4000)
    before = _set(tmp_path)
    assert {"report.json", "report.md", "report.html", "viewer/000.js"} <= set(before)
    newer = report().model_copy(update={"created_at": "2030-01-01T00:00:00Z", "notes": ["a newer report"]})
    real_replace, real_stage = os_mod.replace, fileio.stage_text

    def full_disk(final, text):
        if Path(final).name == "report.html":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_stage(final, text)

    failed: list[str] = []

    def failing_replace(src, dst):  # the new file's rename fails, once (putting the old one back works)
        if Path(dst).name == fail_at.split()[1] and ".tmp" in Path(src).name and not failed:
            failed.append(str(dst))
            raise OSError(errno.EIO, "Input/output error", str(dst))
        return real_replace(src, dst)

    if fail_at.startswith("write"):
        monkeypatch.setattr("vidaudit.report.write.stage_text", full_disk)
    else:
        monkeypatch.setattr(fileio.os, "replace", failing_replace)
    with pytest.raises(DataError, match=r"could not write the report into .*(No space left|Input/output).*unchanged"):
        write_report(newer, many[:10], SPEC, tmp_path, inline_max_bytes=0, chunk_bytes=4000)
    monkeypatch.undo()
    assert failed or fail_at.startswith("write")
    assert _set(tmp_path) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")], "no temporary file or folder is left"
    paths = write_report(newer, many[:10], SPEC, tmp_path, inline_max_bytes=0, chunk_bytes=4000)  # then it works
    assert "a newer report" in paths["md"].read_text(encoding="utf-8")
