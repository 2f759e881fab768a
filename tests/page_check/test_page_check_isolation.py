"""page_check runs none of the page's code and reaches no network (P35), and what the page plants cannot
crash it: a malformed probe result, Chromium's many-line stderr and an undecodable page are one line and
exit 2 (P15, P17-P20). The Chromium cases are skipped where none is installed."""

from __future__ import annotations

import http.server
import subprocess
import threading

import pytest

from normbench.page_check import facts
from normbench.page_check import screenshot as shot
from tests.report.conftest import needs_browser


@pytest.fixture
def listener():
    """A local HTTP server on a free port; yields (port, the paths asked of it)."""
    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            asked.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], asked
    server.shutdown()
    server.server_close()


def _beacon(port: int) -> str:
    url = f"http://127.0.0.1:{port}"
    return (f'<!DOCTYPE html><html><head><link rel="stylesheet" href="{url}/css"></head><body>'
            f'<img src="{url}/img.png" alt="x"><script>fetch("{url}/fetch"); console.error("PAGE SCRIPT RAN");'
            f'parent.document.body.insertAdjacentHTML("afterbegin", "<pre id=nb-check hidden>{{}}</pre>");</script>'
            f'</body></html>')


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@needs_browser
def test_the_page_runs_no_script_and_reaches_no_network(tmp_path, listener, capsys):
    port, asked = listener
    page = tmp_path / "beacon.html"
    page.write_text(_beacon(port))
    assert shot.main([str(page), str(tmp_path / "shots"), "--widths", "420"]) == 1  # the image did not load
    said = capsys.readouterr()
    assert "PAGE SCRIPT RAN" not in said.out and "script(s) of the page's own not run" in said.out, said
    assert facts.main([str(page), "--widths", "420"]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert asked == []


@needs_browser
def test_chromium_itself_reaches_no_network(tmp_path, listener):
    # the flags alone, without the page's policy: a plain page asking for loopback gets nothing
    port, asked = listener
    page = tmp_path / "plain.html"
    page.write_text(f'<html><body><img src="http://127.0.0.1:{port}/img.png"><img src="http://localhost:{port}/b">'
                    f'<script>fetch("http://127.0.0.1:{port}/fetch")</script></body></html>')
    with shot._scratch() as folder:
        shot._run(folder, ["--dump-dom", page.as_uri()], 500, 500)
    assert asked == []


def _chromium_says(monkeypatch, stdout: str, stderr: str = "") -> None:
    monkeypatch.setattr(shot.secrets, "token_hex", lambda n: "n0nce")
    monkeypatch.setattr(shot, "_run", lambda *args: subprocess.CompletedProcess([], 0, stdout, stderr))
    monkeypatch.setattr(shot, "screenshot", lambda report, out, width, height: out / "shot.png")


@pytest.mark.parametrize("planted", ["{not json", "{}", '{"images": 1}', "[]", "null"])
def test_a_malformed_probe_result_is_one_line(tmp_path, monkeypatch, capsys, planted):
    # P17, P18, P20: a JSONDecodeError or KeyError traceback, exit 1
    page = tmp_path / "report.html"
    page.write_text("<html><head></head><body></body></html>")
    _chromium_says(monkeypatch, f'<pre id="nb-check-n0nce" hidden="">{planted}</pre>')
    assert shot.main([str(page), str(tmp_path / "shots"), "--widths", "420"]) == 2
    assert "the page probe's result at 420 px is " in _one_line(capsys)
    monkeypatch.setattr(facts, "check_page", shot.check_page)
    assert facts.main([str(page), "--widths", "420"]) == 2
    _one_line(capsys)


def test_a_result_without_the_runs_nonce_is_not_read(tmp_path, monkeypatch, capsys):
    page = tmp_path / "report.html"
    page.write_text("<html><head></head><body></body></html>")
    _chromium_says(monkeypatch, '<pre id="nb-check" hidden="">{}</pre>', "line one\n[1:2:ERROR:dbus] two\n\tthree")
    assert shot.main([str(page), str(tmp_path / "shots"), "--widths", "420"]) == 2
    assert "the page probe wrote nothing at 420 px: line one [1:2:ERROR:dbus] two three" in _one_line(capsys)


def test_a_malformed_layout_result_is_one_line(tmp_path, monkeypatch, capsys):
    page = tmp_path / "report.html"
    page.write_text("<html><head></head><body></body></html>")
    monkeypatch.setattr(facts, "check_page", lambda *args, **kwargs: {"errors": ['nb-layout:{"cut": 3}']})
    assert facts.main([str(page), "--widths", "420"]) == 2
    assert "layout probe's result at 420 px is malformed" in _one_line(capsys)


def test_an_undecodable_page_is_named(tmp_path, capsys):
    # P15: "'utf-8' codec can't decode byte 0xff ...", without the file's name
    page = tmp_path / "g.html"
    page.write_bytes(b"\xff\xfe<html>")
    assert shot.main([str(page), str(tmp_path / "shots"), "--widths", "420"]) == 2
    assert f"cannot read {page}" in _one_line(capsys)


@pytest.mark.parametrize("meta", ['<meta http-equiv="refresh" content="0;url=http://127.0.0.1:9/">',
                                  "<META HTTP-EQUIV=Refresh CONTENT='0; url=file:///etc/passwd'>"])
def test_a_page_that_navigates_itself_away_is_refused_not_shot_as_ok(tmp_path, capsys, meta):
    # Sn50-Sn52, Sn73: measured before the refresh, shot after it: the browser's error page under "ok"
    page = tmp_path / "r.html"
    page.write_text(f"<html><head>{meta}</head><body>x</body></html>", encoding="utf-8")
    assert shot.main([str(page), str(tmp_path / "shots"), "--widths", "420"]) == 2
    assert "navigates itself away" in _one_line(capsys)
    assert not (tmp_path / "shots").exists() or not any((tmp_path / "shots").iterdir())
