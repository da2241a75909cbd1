"""The trace viewer's trial list wraps between words and between the parts of a label, never inside a word
(it broke "chanc|e", "expecta|tion:" and "not_ju|dged" before): a real report from `score-responses`, opened in
headless Chromium, every word of every list cell measured as laid out."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.manifest import load_samples

#: each word inside one text node of a list cell (a hyphen may end a line, as in any text): its rects on one line
_SPLIT_WORDS = """() => {
  const split = [], labels = [];
  for (const td of document.querySelectorAll('#trial-table tbody td')) {
    labels.push(td.textContent);
    const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /[^\\s-]+/g;
      for (let m = re.exec(node.data); m; m = re.exec(node.data)) {
        const r = document.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
        if (tops.size > 1) split.push(m[0]);
      }
    }
  }
  return {split, labels, rows: document.querySelectorAll('#trial-table tbody tr').length};
}"""


def test_the_trial_list_never_breaks_a_word(smoke_dir: Path, tmp_path: Path) -> None:
    from browser import CHROMIUM, LAUNCH_ARGS, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    samples = load_samples(smoke_dir)[:6]
    model = "openai:Qwen/Qwen2.5-VL-7B-Instruct@http://localhost:8000/v1"
    lines = [
        {"sample_id": s.sample_id, "response": "I think it is 2.", "model": m, "condition": "frames@1/structured_trace"}
        for s in samples
        for m in (model, "chance")
    ]
    resp = tmp_path / "responses.jsonl"
    resp.write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = CliRunner().invoke(
        app,
        [
            "score-responses",
            "--suite",
            "counting",
            "--samples",
            str(smoke_dir / "manifest.jsonl"),
            "--responses",
            str(resp),
            "--out",
            str(tmp_path / "scores.jsonl"),
            "--report",
            str(tmp_path / "rep"),
        ],
    )
    assert r.exit_code == 0, r.output
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            seen = {}
            for width in (1400, 1100):  # two columns, and the narrowest two-column layout
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto((tmp_path / "rep" / "report.html").resolve().as_uri())
                seen[width] = page.evaluate(_SPLIT_WORDS)
                page.close()
        finally:
            browser.close()
    for width, got in seen.items():
        assert got["rows"] == len(lines), got
        assert got["split"] == [], (width, got["split"])
        assert model in got["labels"] and "not" not in "".join(got["labels"]).replace("\u200b", "not")  # no ZWSP
