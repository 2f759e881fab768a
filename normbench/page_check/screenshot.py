"""Look at report.html as a reader would: headless Chromium at a desktop and a phone width.

    python -m normbench.page_check.screenshot REPORT.html OUTDIR [--widths 1400 420] [--height 900]

writes OUTDIR/report-<width>.png (the first screen at each width) and prints, per width, what
`check_page` found: images that did not load, elements that stick out sideways, script errors.
It replaces only screenshots it wrote itself (OUTDIR/.normbench-page-check.json lists them) and
writes nothing through a link; anything else in the way stops it, with one line, before Chromium starts.

Chromium runs with a profile, HOME and XDG folders of its own inside one temporary folder, so nothing
lands in the user's home; that folder is removed on every way out, SIGTERM and SIGHUP included.

`check_page` drives Chromium without any extra Python package: it loads the page inside an iframe
of the exact width (headless Chromium's window is never narrower than 500 px) with a small probe
script beside it, lets Chromium dump the DOM after the load event, and reads back the JSON the probe
wrote there. Chromium is found as $NORMBENCH_CHROMIUM, or `chromium`, `chromium-browser`,
`google-chrome` on PATH.

The page under check runs no code of its own and reaches no network (a report ships no script, and an
edited or foreign one must not run code on this machine or call out of it): a Content-Security-Policy
lets only scripts carrying a random per-run nonce run (the probes; the page cannot know it), and Chromium
runs with every host unresolvable and every request, loopback included, sent to a proxy that is not there.
The probe's result is found by that nonce too, and its shape is checked before it is read.
"""

from __future__ import annotations

import argparse
import html as html_lib
import io
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from normbench.checks import OneLineParser, whole_number
from normbench.report.__main__ import STOPS, Terminated
from normbench.report.output import OutputError, OwnFiles

WIDTHS = (1400, 420)
HEIGHT = 900
MAX_PIXELS = 16384  # a window side past this is a typo; Chromium's own limit is about there
MANIFEST = ".normbench-page-check.json"
FILES_FORMAT = "normbench.page-check-files/1"
_TIMEOUT_S = 60
_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
          "--disable-extensions", "--mute-audio",
          # no network: no host resolves, and every request (loopback too, which a proxy skips by default)
          # goes to a proxy at port 1, where nothing listens
          "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=http://127.0.0.1:1",
          "--proxy-bypass-list=<-loopback>")
MAX_MESSAGE = 300  # characters of Chromium's stderr in a failure's one line

# Headless Chromium will not make a window narrower than 500 px, so the page is laid out inside an
# iframe of the exact width (srcdoc: same origin, so the probe can measure inside it), and a
# screenshot narrower than the window is cropped.
_MIN_WINDOW = 500

# Only the probes' scripts run (they carry the nonce); images and styles only from inside the page.
_POLICY = ("default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; img-src data:; "
           "font-src data:; base-uri 'none'; form-action 'none'")

# Runs first in the page's <head>: records script errors, resources that fail to load and
# console.error calls.
_ERRORS = """<script nonce="{nonce}">
window.__nbErrors = [];
window.addEventListener("error", function (e) {
  var t = e.target;
  window.__nbErrors.push(e.message || ("failed to load " + (t && (t.tagName || "") + " " + String(t.src || t.href || "").slice(0, 60))));
}, true);
(function () { var original = console.error;
  console.error = function () { window.__nbErrors.push(Array.prototype.join.call(arguments, " ")); original.apply(console, arguments); };
})();
</script>"""

# Runs in the frame's parent after everything loaded; writes its findings into <pre id="nb-check-NONCE">.
_PROBE = """<script nonce="{nonce}">
window.addEventListener("load", function () {
  var frame = document.getElementById("page"), doc = frame.contentDocument, win = frame.contentWindow;
  function describe(el) {
    var text = (el.textContent || "").trim().slice(0, 50);
    return el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).split(" ").join(".") : "") + " " + JSON.stringify(text);
  }
  function top(id) { var el = doc.getElementById(id); return el ? el.getBoundingClientRect().top + win.scrollY : null; }
  var width = doc.documentElement.clientWidth, overflow = [];
  doc.body.querySelectorAll("*").forEach(function (el) {
    var scroller = el.closest(".scroll");
    if (scroller && scroller !== el) return;   /* inside a table's own scroll container */
    var r = el.getBoundingClientRect();
    if (r.width > 0 && (r.right > width + 1 || r.left < -1)) overflow.push(describe(el) + " right=" + Math.round(r.right));
  });
  var images = Array.prototype.map.call(doc.images, function (img) {
    /* a <picture> picks the narrow rendering on small screens; each rendering names its smallest text */
    var narrow = Boolean(img.currentSrc) && img.currentSrc !== img.src;
    var holder = img.closest("figure") || img.parentElement;
    return {alt: img.alt, loaded: img.complete && img.naturalWidth > 0, natural_width: img.naturalWidth,
            shown_width: Math.round(img.getBoundingClientRect().width), narrow: narrow,
            column_width: Math.round(holder.getBoundingClientRect().width),
            font_px: parseFloat(img.getAttribute(narrow ? "data-narrow-font-px" : "data-font-px")) || null};
  });
  var style = win.getComputedStyle(doc.body);
  var column = doc.body.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  var boards = Array.prototype.map.call(doc.querySelectorAll(".board table"), function (table) {
    return Array.prototype.map.call(table.querySelectorAll("thead th"), function (th) { return th.textContent.trim(); });
  });
  var foreign = Array.prototype.filter.call(doc.scripts, function (s) { return s.nonce !== "{nonce}"; }).length;
  var errors = (win.__nbErrors || ["the error recorder did not run"]).concat(
    foreign ? [foreign + " script(s) of the page's own not run (page_check runs no code of the page's)"] : []);
  var result = {viewport_width: width, page_width: doc.documentElement.scrollWidth, images: images,
                column_width: Math.round(column), boards: boards,
                overflow: overflow.slice(0, 20), errors: errors,
                answer_top: top("answer"), what_top: top("what")};
  var out = document.createElement("pre");
  out.id = "nb-check-{nonce}";
  out.hidden = true;
  out.textContent = JSON.stringify(result);
  document.body.appendChild(out);
});
</script>"""


def _framed(page: str, width: int, height: int, nonce: str, probe: bool, inside: str = "") -> str:
    """The page in an iframe `width` px wide under _POLICY (a srcdoc frame inherits its parent's), with the
    probes when `probe`; `inside` is a script run in the page itself after it loads."""
    if probe:
        page = page.replace("<head>", "<head>\n" + _ERRORS.replace("{nonce}", nonce), 1)
        if inside:
            page = page.replace("</body>", f'<script nonce="{nonce}">{inside}</script></body>', 1)
    policy = html_lib.escape(_POLICY.format(nonce=nonce), quote=True)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{policy}"></head><body style="margin:0">'
            f'<iframe id="page" style="width:{width}px;height:{height}px;border:0;display:block" '
            f'srcdoc="{html_lib.escape(page, quote=True)}"></iframe>'
            f'{_PROBE.replace("{nonce}", nonce) if probe else ""}</body></html>')


def _said(stderr: str) -> str:
    """The end of what Chromium wrote on stderr, as part of one line."""
    return " ".join(stderr.split())[-MAX_MESSAGE:]


# a page that sends its frame elsewhere (<meta http-equiv="refresh">) is measured before it goes and shot after:
# the picture would be the browser's error page under an "ok" (hostile Sn50-Sn52, Sn73); no report has one
_REFRESH = re.compile(r"""<meta\b[^>]*\bhttp-equiv\s*=\s*["']?\s*refresh""", re.I)


def _read_page(report: Path) -> str:
    try:
        page = Path(report).read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise RuntimeError(f"cannot read {report}: {error}") from None
    if _REFRESH.search(page):
        raise RuntimeError(f"{report} navigates itself away (a meta refresh): what it shows cannot be checked")
    return page


class NoBrowser(RuntimeError):
    """No Chromium to drive; the message says what was looked for."""


def find_chromium() -> str:
    names = [os.environ.get("NORMBENCH_CHROMIUM", ""), "chromium", "chromium-browser", "google-chrome"]
    for name in filter(None, names):
        found = shutil.which(name)
        if found:
            return found
    raise NoBrowser("no Chromium found (set NORMBENCH_CHROMIUM, or install chromium)")


pixels = whole_number(1, MAX_PIXELS, "pixels")  # a width or height on the command line


def shot_files(out: Path) -> OwnFiles:
    """The one writer of the screenshots in ``out``: its own files only, never through a link."""
    return OwnFiles(out, MANIFEST, FILES_FORMAT, "normbench.page_check.screenshot")


@contextmanager
def _scratch():
    """One temporary folder for everything Chromium touches: the framed page, the screenshot before it
    is placed, the profile, HOME and the XDG folders (Chromium writes under $HOME otherwise), TMPDIR. Removed
    on the way out; a SIGTERM or SIGHUP is an exception in main (stopping_on_signals), so that too."""
    with tempfile.TemporaryDirectory(prefix="normbench-chromium-", ignore_cleanup_errors=True) as folder:
        yield Path(folder)


def _run(folder: Path, args: list[str], width: int, height: int) -> subprocess.CompletedProcess:
    home = folder / "home"
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_CACHE_HOME": str(home / ".cache"), "XDG_DATA_HOME": str(home / ".local" / "share"),
           "TMPDIR": str(folder)}  # its own temporary files (org.chromium.Chromium.*) too
    command = [find_chromium(), *_FLAGS, f"--user-data-dir={folder / 'profile'}", f"--window-size={width},{height}",
               *args]
    # its own process group: Chromium's helpers (zygote, crash handler) go with it, and none writes into
    # the scratch folder after it is removed
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=_TIMEOUT_S)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:  # the group is gone already
            pass
        process.wait()
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def screenshot(report: Path, out: Path, width: int, height: int = HEIGHT) -> Path:
    """The first `height` pixels of the page laid out `width` px wide, as out/report-<width>.png (shot_files)."""
    page = _read_page(report)
    with _scratch() as folder:
        framed, shot = folder / "framed.html", folder / "shot.png"
        framed.write_text(_framed(page, width, height, secrets.token_hex(16), probe=False), encoding="utf-8")
        result = _run(folder, [f"--screenshot={shot}", framed.as_uri()], max(width, _MIN_WINDOW), height)
        if not shot.is_file():
            raise RuntimeError(f"chromium wrote no screenshot at {width} px: {_said(result.stderr)}")
        png = shot.read_bytes()
    if width < _MIN_WINDOW:
        from PIL import Image  # matplotlib's own dependency

        with Image.open(io.BytesIO(png)) as image:
            cropped, png = image.crop((0, 0, width, image.height)), io.BytesIO()
        cropped.save(png, format="png")
        png = png.getvalue()
    return shot_files(out).write(f"report-{width}.png", png)


def check_page(report: Path, width: int, height: int = HEIGHT, inside: str = "") -> dict:
    """What the probe measured on `report` laid out `width` px wide: see _PROBE for the keys. `inside`: a
    script of the caller's, run in the page after it loads (facts' layout probe)."""
    page, nonce = _read_page(report), secrets.token_hex(16)
    with _scratch() as folder:
        framed = folder / "framed.html"
        framed.write_text(_framed(page, width, height, nonce, probe=True, inside=inside), encoding="utf-8")
        result = _run(folder, ["--dump-dom", framed.as_uri()], max(width, _MIN_WINDOW), height)
    found = re.search(f'<pre id="nb-check-{nonce}" hidden="">(.*?)</pre>', result.stdout, re.S)
    if not found:
        raise RuntimeError(f"the page probe wrote nothing at {width} px: {_said(result.stderr)}")
    return probe_result(html_lib.unescape(found.group(1)), width)


_NUMBER, _OPTIONAL = (int, float), (int, float, type(None))
_CHECK_KEYS = {"viewport_width": _NUMBER, "page_width": _NUMBER, "images": list, "column_width": _NUMBER,
               "boards": list, "overflow": list, "errors": list, "answer_top": _OPTIONAL, "what_top": _OPTIONAL}
_IMAGE_KEYS = {"alt": str, "loaded": bool, "natural_width": _NUMBER, "shown_width": _NUMBER, "narrow": bool,
               "column_width": _NUMBER, "font_px": _OPTIONAL}


def _fits(value, kind) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool))  # true is no number


def _malformed(value, keys: dict) -> str | None:
    """Which key of `keys` the object `value` lacks or holds with the wrong type, or None."""
    if not isinstance(value, dict):
        return f"{type(value).__name__}, not an object"
    return next((f"{key}: missing or of the wrong type" for key, kind in keys.items()
                 if not _fits(value.get(key), kind) or key not in value), None)


def probe_result(text: str, width: int) -> dict:
    """The probe's JSON, checked against the shape `problems` reads; anything else is a RuntimeError."""
    try:
        check = json.loads(text)
    except ValueError as error:
        raise RuntimeError(f"the page probe's result at {width} px is not JSON: {error}") from None
    why = _malformed(check, _CHECK_KEYS)
    why = why or next(filter(None, (_malformed(i, _IMAGE_KEYS) for i in check["images"])), None)
    if why is None and not all(isinstance(e, str) for e in check["errors"] + check["overflow"]):
        why = "errors and overflow: not all text"
    if why is not None:
        raise RuntimeError(f"the page probe's result at {width} px is malformed ({why[:MAX_MESSAGE]})")
    return check


MIN_TEXT_PX = 9  # smaller text on a screen is hard to read


def shown_font_px(image: dict) -> float | None:
    """The smallest text of a figure as shown: its size in the PNG scaled by the image's shown width."""
    if not image.get("font_px") or not image.get("natural_width"):
        return None
    return image["font_px"] * image["shown_width"] / image["natural_width"]


def problems(check: dict) -> list[str]:
    """What a reader would see go wrong, from one check_page result; empty when all is well."""
    found = [f"image not loaded: {i['alt']}" for i in check["images"] if not i["loaded"]]
    found += [f"image wider than its column: {i['alt']} ({i['shown_width']} > {i['column_width']} px)"
              for i in check["images"] if i["shown_width"] > i["column_width"] + 1]
    found += [f"image text shrunk to {shown_font_px(i):.1f} px: {i['alt']}" for i in check["images"]
              if shown_font_px(i) is not None and shown_font_px(i) < MIN_TEXT_PX]
    found += [f"sticks out sideways: {o}" for o in check["overflow"]]
    if check["page_width"] > check["viewport_width"]:
        found.append(f"page scrolls sideways: {check['page_width']} px wide in a {check['viewport_width']} px window")
    found += [f"error: {e}" for e in check["errors"]]
    return found


def _stop(signum, frame):
    stop = Terminated()
    stop.signum = signum
    raise stop


@contextmanager
def stopping_on_signals(prog: str):
    """SIGTERM and SIGHUP raise where the work is (as Ctrl-C does), so every temporary folder is removed on
    the way out; the stop is then one line on stderr and SystemExit(128 + the signal's number)."""
    previous = {signum: signal.signal(signum, _stop) for signum in STOPS}
    try:
        yield
    except KeyboardInterrupt as stop:
        signum = getattr(stop, "signum", signal.SIGINT)
        print(f"{prog}: stopped by {signal.Signals(signum).name}", file=sys.stderr)
        raise SystemExit(128 + signum) from None
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)


def _folder(text: str) -> Path:
    if not text.strip():  # Path('') is the working folder
        raise argparse.ArgumentTypeError("is empty; name a folder")
    return Path(text)


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m normbench.page_check.screenshot", description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="report.html")
    parser.add_argument("out", type=_folder, help="folder for report-<width>.png")
    parser.add_argument("--widths", type=pixels, nargs="+", default=list(WIDTHS))
    parser.add_argument("--height", type=pixels, default=HEIGHT)
    args = parser.parse_args(argv)
    if not args.report.is_file():
        print(f"{parser.prog}: {args.report} is not a file", file=sys.stderr)
        return 2
    refused = shot_files(args.out).refusal([f"report-{width}.png" for width in args.widths])
    if refused:  # before Chromium starts: a link, a file where the folder should be, a user's PNG
        print(f"{parser.prog}: {refused}", file=sys.stderr)
        return 2
    with stopping_on_signals(parser.prog):
        try:
            status = 0
            for width in args.widths:
                path = screenshot(args.report, args.out, width, args.height)
                found = problems(check_page(args.report, width, args.height))
                status = status or (1 if found else 0)
                print(f"{path}: " + ("; ".join(found) if found else "ok (images loaded and legible, nothing sticks out, no errors)"))
            return status
        except (NoBrowser, RuntimeError, OutputError, OSError, UnicodeDecodeError, subprocess.TimeoutExpired) as error:
            print(f"{parser.prog}: {error}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
