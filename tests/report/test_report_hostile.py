"""Hostile text in every report format: report.md is as safe as report.html, rendered with raw HTML on.

What a model, a user or an annotator wrote (model names, condition labels, score-responses labels,
annotator ids) reaches report.md through one escaping rule (``report.tables.md_escape``). These tests
push hostile strings through the real stages (``run``, ``score-responses``, ``human-study import``,
``report``), render report.md with markdown-it (CommonMark with raw HTML on, plus GFM tables and
strikethrough, as GitHub-style viewers and notebooks do) and check that no tag, link, image, code span
or emphasis comes out of user text, that every string reads back exactly as written, and that neither
the rendered Markdown nor report.html fires a script in headless Chromium.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from vidaudit.cli import app
from vidaudit.core.manifest import load_samples
from vidaudit.report.tables import md_escape

#: raw HTML on: what a renderer that passes HTML through would do with report.md
MD = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")
#: markup that user text must never produce
FORBIDDEN = {
    "html_inline",
    "html_block",
    "link_open",
    "image",
    "code_inline",
    "s_open",
    "em_open",
    "strong_open",
    "code_block",
    "fence",
    "heading_open",
    "bullet_list_open",
    "ordered_list_open",
    "blockquote_open",
    "hr",
}

HOSTILE = [
    "<script>alert('model')</script>",
    "<img src=x onerror=alert('img')>",
    "[click](javascript:alert('link'))",
    "![pixel](http://127.0.0.1:9/track.png)",
    "[ref]: http://127.0.0.1:9/ref",
    "a|b|c pipe",
    "`code` and ``more``",
    "**bold** _it_ ~~gone~~",
    "# heading",
    "&lt;script&gt;alert('entity')&lt;/script&gt;",
    "<!-- comment --> <?php ?> <![CDATA[x]]>",
    "<http://127.0.0.1:9/autolink> <a@b.example>",
    "<svg/onload=alert('svg')>",
    "1. list > quote \\ back",
]


def _types(tokens) -> set[str]:
    out: set[str] = set()
    for t in tokens:
        out.add(t.type)
        if t.children:
            out |= _types(t.children)
    return out


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _text(html: str) -> str:
    p = _Text()
    p.feed(html)
    p.close()
    return " ".join("".join(p.parts).split())


def _flat(s: str) -> str:
    return " ".join(s.split())


_PIECES = st.sampled_from(
    list("<>&[]()!*_`~|\\#-+=.:;/ \"'aZ09é\n\t{}?@$")
    + [
        "1.",
        "2)",
        "***",
        "---",
        "___",
        "===",
        "    ",
        "&lt;",
        "&#60;",
        "http://x",
        "<b>",
        "</b>",
        "<!--",
        "-->",
        "<a@b.c>",
        "[^1]",
        "<script>",
        "onerror=",
        "javascript:",
    ]
)


@given(st.lists(_PIECES, max_size=30).map("".join))
def test_md_escape_reads_back_exactly_and_makes_no_markup(text: str) -> None:
    """Any text, wherever report.md puts it (a paragraph, a list item, a table cell, a heading): no markup
    comes out of it and the rendered words are the words written (line breaks become spaces)."""
    escaped = md_escape(text)
    want = _flat(text)
    for where in ("{}", "- {}", "### {}", "| a | b |\n| --- | --- |\n| {} | x |"):
        doc = where.format(escaped)
        made = (
            _types(MD.parse(doc))
            - ({"bullet_list_open"} if where.startswith("-") else set())
            - ({"heading_open"} if where.startswith("#") else set())
        )
        assert not made & FORBIDDEN, (where, text, escaped)
        got = _text(MD.render(doc))
        if where.startswith("|"):
            assert got == _flat(f"a b {want} x"), (text, escaped, got)
        else:
            assert got == want, (where, text, escaped, got)
    # a label report.md follows with ":" (the settings list): "[x]" there must not define a link
    doc = f"- {md_escape(text, label=True)}: x\n\n[x]"
    assert not _types(MD.parse(doc)) & (FORBIDDEN - {"bullet_list_open"}), (text, doc)
    assert _text(MD.render(doc)).startswith(_flat(text + ": x")), (text, doc)


def test_md_escape_keeps_plain_labels_readable() -> None:
    """Characters that cannot start markup stay as they are, so report.md reads well as text too."""
    for plain in (
        "bounce_ball",
        "native@all/structured_trace",
        "N*(F) — N* by F (Hz)",
        '{"k": [1, 2]}',
        "<1",
        "a < b > c",
        "-0.05",
        "12.5",
        "A & B",
        "50% $5",
    ):
        assert md_escape(plain) == plain


# --------------------------------------------------------------------------- through the real stages


def _cli(*args: object) -> str:
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


def _check_markdown(md_path: Path, expected: list[str]) -> str:
    """report.md parsed with raw HTML on: no HTML, link, image or code token anywhere (the report's own
    emphasis is ``**key**`` bullets and ``_Values: ..._`` lines, none around user text); every hostile
    string reads back whole in the rendered text. Returns the rendered HTML."""
    md = md_path.read_text(encoding="utf-8")
    tokens = MD.parse(md)
    made = _types(tokens)
    assert not made & {
        "html_inline",
        "html_block",
        "link_open",
        "image",
        "code_inline",
        "s_open",
        "code_block",
        "fence",
        "blockquote_open",
        "hr",
    }, made
    html = MD.render(md)
    assert "<script" not in html and "<img" not in html and "<svg" not in html and "<a " not in html
    text = _text(html)
    for s in expected:
        assert _flat(s) in text, s
    for block in md.split("\n\n"):  # a '|' from user text never adds a cell: every row has its header's count
        rows = [line for line in block.splitlines() if line.startswith("| ")]
        if len(rows) >= 2:
            n = sum(1 for x in MD.parse(rows[0] + "\n" + rows[1]) if x.type == "th_open")
            assert n == len(_split_row(rows[0])), rows[0]
            assert all(len(_split_row(r)) == n for r in rows[2:]), rows[0]
    return html


def _split_row(row: str) -> list[str]:
    """The cells of a GFM table row: split on '|' not escaped by a backslash."""
    cells, cur, i = [], "", 1
    body = row.strip()
    while i < len(body) - 1:
        ch = body[i]
        if ch == "\\" and i + 1 < len(body) - 1:
            cur += body[i : i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur)
    return cells


@pytest.fixture(scope="module")
def hostile_reports(smoke_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """score-responses with hostile model and condition labels; a run with a hostile constant model, a human
    study answered by annotators with hostile ids, and its report."""
    root = tmp_path_factory.mktemp("hostile")
    samples = load_samples(smoke_dir)[:3]
    lines = [
        {"sample_id": samples[i % 3].sample_id, "response": f"{h} \\boxed{{1}}", "model": h, "condition": f"c {h}"}
        for i, h in enumerate(HOSTILE)
    ]
    (root / "responses.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    _cli(
        "score-responses",
        "--suite",
        "counting",
        "--samples",
        smoke_dir,
        "--responses",
        root / "responses.jsonl",
        "--out",
        root / "scores.jsonl",
        "--report",
        root / "responses-report",
    )

    run = root / "run"
    _cli(
        "run",
        "counting",
        "--data",
        smoke_dir,
        "--model",
        "oracle",
        "--model",
        f"constant:{HOSTILE[1]}",
        "--condition",
        "frames@1",
        "--limit",
        "4",
        "--out",
        run,
    )
    _cli("human-study", "export", run, "--out", root / "study.html", "--sample", "4")
    manifest = json.loads((root / "study.json").read_text())
    for n, annotator in enumerate((HOSTILE[0], HOSTILE[2] + " " + HOSTILE[5])):
        answers = {it["item_id"]: f"\\boxed{{{it['correct']}}}" for it in manifest["items"]}
        (root / f"answers{n}.json").write_text(
            json.dumps({"annotator": annotator, "study": manifest["study"], "answers": answers})
        )
    _cli("human-study", "import", root / "answers0.json", root / "answers1.json", "--into", run)
    _cli("report", run)
    return {"responses": root / "responses-report", "run": run / "report"}


def test_hostile_labels_in_report_md_stay_text(hostile_reports: dict[str, Path]) -> None:
    _check_markdown(hostile_reports["responses"] / "report.md", HOSTILE + [f"c {h}" for h in HOSTILE])


def test_hostile_model_and_annotator_ids_in_report_md_stay_text(hostile_reports: dict[str, Path]) -> None:
    md = (hostile_reports["run"] / "report.md").read_text(encoding="utf-8")
    assert "## Human study" in md
    _check_markdown(hostile_reports["run"] / "report.md", [HOSTILE[1], HOSTILE[0], HOSTILE[2] + " " + HOSTILE[5]])


def test_no_script_fires_from_any_report_format_in_chromium(hostile_reports: dict[str, Path], tmp_path: Path) -> None:
    """report.md rendered with raw HTML on (no CSP: the worst viewer) and report.html, in headless Chromium:
    no dialog, no page error, no request leaves file://."""
    from browser import CHROMIUM, LAUNCH_ARGS, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    pages = []
    for name, folder in hostile_reports.items():
        md_page = tmp_path / f"{name}-md.html"
        md_page.write_text(
            "<!DOCTYPE html><meta charset='utf-8'><body>"
            + MD.render((folder / "report.md").read_text(encoding="utf-8"))
            + "</body>",
            encoding="utf-8",
        )
        pages += [md_page, folder / "report.html"]
    dialogs: list[str] = []
    outside: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        try:
            page = browser.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.on("request", lambda r: None if r.url.startswith(("file:", "data:")) else outside.append(r.url))
            for path in pages:
                page.goto(path.resolve().as_uri())
                page.wait_for_load_state("load")
                page.wait_for_timeout(300)
                if path.name == "responses-md.html":  # the hostile label is on the page, as text
                    assert HOSTILE[0] in page.inner_text("body")
                if path.name == "report.html":
                    page.click("#trial-rows tr")  # opens a trial: the model's hostile text goes into the page
                    page.wait_for_timeout(200)
        finally:
            browser.close()
    assert dialogs == [] and outside == []
