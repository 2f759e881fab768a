"""The two report files from one context: report.md (GitHub pipe tables, figures by relative path)
and report.html (one self-contained file: inline CSS, figures as base64 data URIs, no scripts;
each figure in its wide rendering, and its narrow one for screens up to 900 px through <picture>).

Every string in the context may come from a config, a path or a failure reason, so the HTML
environment autoescapes everything and the Markdown filters escape every cell.
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import jinja2
from PIL import Image  # matplotlib's own dependency

from normbench.report.figures import MIN_FONT_KEY
from normbench.report.tables import Table, split_wide

TEMPLATES = Path(__file__).parent / "templates"


# Markdown a record's string could start: links and images ([text](url), ![alt](src)), code spans,
# and GitHub's bare autolinks (scheme://, www., user@host). A backslash makes each character literal.
_MARKDOWN_LIVE = str.maketrans({"\\": "\\\\", "[": "\\[", "]": "\\]", "`": "\\`", "@": "\\@"})


def markdown_text(value: object) -> str:
    """Text safe inside a GitHub pipe-table cell, and as data anywhere in Markdown: HTML escaped,
    pipes and link syntax escaped (nothing renders as a link or an image), one line."""
    text = html.escape(str(value), quote=False).translate(_MARKDOWN_LIVE)
    text = text.replace("://", ":\\/\\/").replace("www.", "www\\.")
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_table(table: Table) -> str:
    if not table.columns:
        return ""
    lines = []
    for part in split_wide(table):  # at most tables.MAX_COLUMNS columns, as on the page
        lines += ([""] if lines else []) + [
            "| " + " | ".join(markdown_text(c) for c in part.columns) + " |",
            "|" + "|".join("---" for _ in part.columns) + "|"]
        lines += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in part.rows]
    if table.note:
        lines += ["", f"*{markdown_text(table.note)}*"]
    return "\n".join(lines)


def _environment(autoescape: bool) -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=autoescape,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                              keep_trailing_newline=True)


def write_report(context: dict, out: Path) -> tuple[Path, Path]:
    markdown = _environment(autoescape=False)
    markdown.filters["md"] = markdown_text
    markdown.filters["md_table"] = markdown_table
    md_path = out / "report.md"
    md_path.write_text(markdown.get_template("report.md.j2").render(**context), encoding="utf-8")

    def data_uri(relative_path: str) -> str:
        encoded = base64.b64encode((out / relative_path).read_bytes()).decode("ascii")
        return f"data:image/png;base64,{encoded}"

    def font_px(relative_path: str) -> str:
        """The smallest text of a figure in its PNG's own pixels (figures.MIN_FONT_KEY), for the browser check."""
        with Image.open(out / relative_path) as image:
            return str(image.text.get(MIN_FONT_KEY, ""))

    page = _environment(autoescape=True)
    page.filters["data_uri"] = data_uri
    page.filters["font_px"] = font_px
    page.filters["split_wide"] = split_wide
    html_path = out / "report.html"
    html_path.write_text(page.get_template("report.html.j2").render(**context), encoding="utf-8")
    return md_path, html_path
