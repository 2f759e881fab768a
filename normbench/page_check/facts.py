"""What a report page promises, read back from it: for the tests and for a report someone is about to send.

    python -m normbench.page_check.facts REPORT.html [--widths 1400 420]

prints the page's size, its figures per study, its widest table, ids used twice, links to no id
and captions repeated (from the HTML alone, with the standard library's parser), and, per width, the cells a
reader must see whole (arm, metric, interval, verdict: class "keep") that Chromium lays out cut or
off-screen. Exit status 1 when a promise is broken (see `broken`).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

from normbench.checks import OneLineParser
from normbench.page_check.screenshot import NoBrowser, check_page, pixels, stopping_on_signals
from normbench.report.sections import MAX_FIGURES
from normbench.report.tables import MAX_COLUMNS

MAX_BYTES = 3_000_000  # a page a researcher can open and send: 3 MB


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.links: list[str] = []  # in-page links: href="#id"
        self.captions: list[str] = []
        self.widths: list[int] = []  # cells in each table row
        self.study_figures: dict[str, int] = {}
        self._sections: list[str | None] = []  # the open <section>s: the study id, or None
        self._caption: list[str] | None = None
        self._cells: int | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.ids.append(str(found["id"]))
        if tag == "a" and str(found.get("href") or "").startswith("#"):
            self.links.append(str(found["href"])[1:])
        if tag == "section":
            study = "study" in str(found.get("class") or "").split()
            self._sections.append(str(found.get("id")) if study else None)
            if study:
                self.study_figures[str(found.get("id"))] = 0
        study = next((s for s in reversed(self._sections) if s), None)
        if tag == "figure" and study:
            self.study_figures[study] += 1
        if tag == "figcaption":
            self._caption = []
        if tag == "tr":
            self._cells = 0
        if tag in ("td", "th") and self._cells is not None:
            self._cells += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self._sections:
            self._sections.pop()
        if tag == "figcaption" and self._caption is not None:
            self.captions.append(" ".join("".join(self._caption).split()))
            self._caption = None
        if tag == "tr" and self._cells is not None:
            self.widths.append(self._cells)
            self._cells = None

    def handle_data(self, data: str) -> None:
        if self._caption is not None:
            self._caption.append(data)


def html_facts(page: Path) -> dict:
    """The page's promises as read from its HTML (no browser)."""
    text = Path(page).read_text(encoding="utf-8")
    reader = _Reader()
    reader.feed(text)
    return {"bytes": len(text.encode("utf-8")), "study_figures": reader.study_figures,
            "figures": len(reader.captions), "widest_table": max(reader.widths, default=0),
            "duplicate_ids": sorted(i for i, n in Counter(reader.ids).items() if n > 1),
            "dangling_links": sorted(set(reader.links) - set(reader.ids)),
            "repeated_captions": sorted(c[:100] for c, n in Counter(reader.captions).items() if n > 1)}


# Runs inside the page after it loaded; reports through the console, which screenshot.check_page records.
_LAYOUT = """
window.addEventListener("load", function () {
  var width = document.documentElement.clientWidth, cut = [], seen = {};
  document.querySelectorAll("td.keep").forEach(function (td) {
    var r = td.getBoundingClientRect(), label = td.getAttribute("data-label") || "";
    seen[label] = (seen[label] || 0) + 1;
    var what = label + ": " + td.textContent.trim().slice(0, 40);
    if (td.scrollWidth > td.clientWidth + 1) cut.push(what + " (cut)");
    else if (r.width === 0 || r.right > width + 1 || r.left < -1) cut.push(what + " (off-screen, right=" + Math.round(r.right) + ")");
  });
  console.error("nb-layout:" + JSON.stringify({cut: cut.slice(0, 20), n_cut: cut.length, kept: seen}));
});
"""
_MARK = "nb-layout:"


def layout_facts(page: Path, width: int) -> dict:
    """The cells a reader must see whole, as Chromium lays the page out `width` px wide: `cut`
    (wider than their box, or outside the window), `kept` (how many there are, per column), and
    `check`: screenshot.check_page's own findings, this probe's line taken out of its errors."""
    check = check_page(page, width, inside=_LAYOUT)
    lines = [e for e in check["errors"] if e.startswith(_MARK)]
    check["errors"] = [e for e in check["errors"] if not e.startswith(_MARK)]
    facts = _layout(lines[0][len(_MARK):], width) if lines else {"cut": ["the layout probe did not run"],
                                                                   "n_cut": 1, "kept": {}}
    return {**facts, "check": check}


def _layout(text: str, width: int) -> dict:
    """The layout probe's JSON, checked against the shape main reads; anything else is a RuntimeError."""
    try:
        facts = json.loads(text)
    except ValueError:
        facts = None
    if not (isinstance(facts, dict) and isinstance(facts.get("cut"), list) and isinstance(facts.get("kept"), dict)
            and isinstance(facts.get("n_cut"), int) and all(isinstance(c, str) for c in facts["cut"])):
        raise RuntimeError(f"the layout probe's result at {width} px is malformed: {' '.join(text.split())[:100]}")
    return facts


def broken(facts: dict) -> list[str]:
    """The promises html_facts shows broken, one line each."""
    found = [f"{study}: {n} figures (at most {MAX_FIGURES})" for study, n in facts["study_figures"].items()
             if n > MAX_FIGURES]
    if facts["widest_table"] > MAX_COLUMNS:
        found.append(f"a table {facts['widest_table']} columns wide (at most {MAX_COLUMNS})")
    found += [f"id used twice: {i}" for i in facts["duplicate_ids"]]
    found += [f"link to no id: #{i}" for i in facts["dangling_links"]]
    found += [f"caption repeated: {c}" for c in facts["repeated_captions"]]
    if facts["bytes"] > MAX_BYTES:
        found.append(f"{facts['bytes'] / 1e6:.2f} MB (at most {MAX_BYTES / 1e6:g} MB)")
    return found


def _unreadable(page: Path) -> str | None:
    """Why ``page`` cannot be read as a page, or None: it is missing, or not a regular file (a FIFO would
    block the read forever, a device never end)."""
    try:
        mode = os.stat(page).st_mode
    except OSError as err:
        return err.strerror or str(err)
    return None if stat.S_ISREG(mode) else "not a regular file"


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m normbench.page_check.facts", description=__doc__.split("\n")[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--widths", type=pixels, nargs="*", default=[],
                        help="also lay it out in Chromium at these widths")
    args = parser.parse_args(argv)
    why = _unreadable(args.report)
    try:
        facts = html_facts(args.report) if why is None else None
    except (OSError, UnicodeDecodeError) as err:  # an unreadable page: one line, as every refusal
        why = getattr(err, "strerror", None) or str(err)
    if why is not None:
        print(f"{parser.prog}: error: cannot read {args.report}: {why}", file=sys.stderr)
        return 2
    print(json.dumps({k: v for k, v in facts.items()}, ensure_ascii=False))
    problems = broken(facts)
    with stopping_on_signals(parser.prog):  # a stop mid-layout removes the temporary folders too
        for width in args.widths:
            try:
                layout = layout_facts(args.report, width)
            except (NoBrowser, RuntimeError, OSError, subprocess.TimeoutExpired) as err:
                print(f"{parser.prog}: {' '.join(str(err).split())[:300]}", file=sys.stderr)
                return 2
            print(f"{width} px: {layout['n_cut']} cut or off-screen {layout['cut'][:5]}; kept cells {layout['kept']}")
            problems += [f"{width} px: {c}" for c in layout["cut"]]
    for line in problems:
        print(line, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    from normbench.checks import exit_on_full_stdout

    sys.exit(exit_on_full_stdout("normbench.page_check.facts", main))
