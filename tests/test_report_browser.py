"""Open report.html of a real small run in headless Chromium over the DevTools protocol.

Checks: no console errors or exceptions, no network request besides the page itself, the charts
are drawn, and the trajectory viewer shows an episode's tool calls and checks. Screenshots are
saved under test-artifacts/ (gitignored). Skipped, with the reason, when Chromium is not installed.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from test_eval_support import report_run
from toolgym.eval.report import ReportOptions, write_report

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--remote-debugging-port=0",
]


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class DevTools:
    """A minimal WebSocket (RFC 6455) client speaking the Chrome DevTools protocol; stdlib only."""

    def __init__(self, url: str, timeout_s: float = 60.0) -> None:
        parsed = urlparse(url)
        self.sock = socket.create_connection((parsed.hostname, parsed.port), timeout=timeout_s)
        key = base64.b64encode(secrets.token_bytes(16)).decode()
        request = (f"GET {parsed.path} HTTP/1.1\r\nHost: {parsed.hostname}:{parsed.port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            response += chunk
        head, _, self.buffer = response.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(f"WebSocket handshake refused: {head[:200]!r}")
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def _read(self, count: int) -> bytes:
        while len(self.buffer) < count:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("DevTools connection closed")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        header = bytes([0x80 | opcode])
        length = len(payload)
        if length < 126:
            header += bytes([0x80 | length])
        elif length < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack("!H", length)
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", length)
        mask = secrets.token_bytes(4)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _message(self) -> dict[str, Any]:
        parts = b""
        while True:
            first, second = self._read(2)
            opcode, length = first & 0x0F, second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._read(8))[0]
            payload = self._read(length)
            if opcode == 0x9:  # ping
                self._send_frame(0xA, payload)
                continue
            if opcode == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            parts += payload
            if first & 0x80:
                return json.loads(parts.decode())

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        wanted = self.next_id
        self._send_frame(0x1, json.dumps({"id": wanted, "method": method, "params": params}).encode())
        while True:
            message = self._message()
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_for(self, method: str, timeout_s: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for event in self.events:
                if event["method"] == method:
                    return event
            self.events.append(self._message())
        raise TimeoutError(f"no {method} event within {timeout_s}s")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def poll(self, expression: str, timeout_s: float = 30.0) -> Any:
        """Evaluate until truthy (the viewer reacts to hashchange asynchronously)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise TimeoutError(f"page never satisfied: {expression}")

    def screenshot(self, path: Path, clip: dict[str, float] | None = None) -> None:
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": True}
        if clip:
            params["clip"] = {**clip, "scale": 1}
        data = self.call("Page.captureScreenshot", **params)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


@contextlib.contextmanager
def chromium_page(binary: str) -> Iterator[DevTools]:
    """A fresh headless Chromium (own profile folder) and a DevTools session on its first page."""
    profile = Path(tempfile.mkdtemp(prefix="toolgym-chromium-"))
    log = open(profile.parent / f"{profile.name}.log", "w")  # noqa: SIM115
    process = subprocess.Popen([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                               stdout=log, stderr=subprocess.STDOUT)
    devtools = None
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not start: {Path(log.name).read_text()[-2000:]}")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as response:
            targets = json.load(response)
        page = next(t for t in targets if t.get("type") == "page")
        devtools = DevTools(page["webSocketDebuggerUrl"])
        yield devtools
    finally:
        if devtools is not None:
            devtools.close()
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)
        log.close()
        shutil.rmtree(profile, ignore_errors=True)
        Path(log.name).unlink(missing_ok=True)


def console_errors(events: list[dict[str, Any]]) -> list[str]:
    errors = []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            errors.append(f"{details.get('text', '')} {details.get('exception', {}).get('description', '')}".strip())
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            errors.append(params["entry"].get("text", ""))
    return errors


def requested_urls(events: list[dict[str, Any]]) -> list[str]:
    return [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]


@pytest.mark.slow
def test_report_html_in_headless_chromium() -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); .ci/run installs it")
    run = report_run()
    _, html_path = write_report(run, options=ReportOptions(ks=[1, 2]))
    page_url = html_path.resolve().as_uri()
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium_page(binary) as page:
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call("Emulation.setDeviceMetricsOverride", width=1360, height=900, deviceScaleFactor=1, mobile=False)
        page.call("Page.navigate", url=page_url)
        page.wait_for("Page.loadEventFired")
        page.poll("document.readyState === 'complete'")

        charts = page.evaluate("Array.from(document.querySelectorAll('figure svg.chart')).map(s => "
                               "[s.closest('section').id, s.querySelectorAll('path, rect, use').length])")
        assert {section for section, _ in charts} >= {"stages", "training", "results"}, charts
        assert all(marks > 10 for _, marks in charts), charts  # drawn, not empty frames
        # a bar label: numerator/denominator is printed on the chart itself
        assert page.evaluate("Array.from(document.querySelectorAll('#results svg text')).some("
                             "t => /^\\d+\\/\\d+$/.test(t.textContent.trim()))")

        # the viewer: open a passed oracle episode of a task with tool calls, by clicking it
        target = page.evaluate(
            "(() => { const d = JSON.parse(document.getElementById('episodes-data').textContent).episodes;"
            " const e = d.find(x => x.run === 'sft' && x.outcome === 'passed' && x.tool_call_count >= 2);"
            " return e ? {id: e.id, task: e.task, tools: e.messages.flatMap(m => m.tool_calls.map(c => c.name))}"
            " : null; })()"
        )
        assert target is not None
        page.evaluate(f"document.getElementById('f-run').value = 'sft';"
                      f"document.getElementById('f-run').dispatchEvent(new Event('change'));"
                      f"document.querySelector('.ep-item[data-id=\"{target['id']}\"]').click()")
        page.poll(f"document.querySelector('#ep-detail h3') && "
                  f"document.querySelector('#ep-detail h3').textContent === {json.dumps(target['task'])}")
        shown_calls = page.evaluate("Array.from(document.querySelectorAll('#ep-detail .tool-call .tool-name'))"
                                    ".map(n => n.textContent)")
        assert shown_calls == [f"→ {name}" for name in target["tools"]]
        assert page.evaluate("document.querySelectorAll('#ep-detail .tool-result').length") >= len(target["tools"])
        assert page.evaluate("document.querySelectorAll('#ep-detail .checks li.check-pass').length") >= 1
        assert page.evaluate("document.querySelectorAll('#ep-detail .checks li.check-fail').length") == 0
        top = page.evaluate("document.getElementById('trajectories').getBoundingClientRect().top + window.scrollY")
        height = page.evaluate("document.getElementById('trajectories').getBoundingClientRect().height")
        page.screenshot(ARTIFACTS / "report-viewer.png", {"x": 0, "y": top - 10, "width": 1360,
                                                          "height": min(height + 20, 1600)})

        # the status filter: only errored episodes, and the errored one shows its cause
        page.evaluate("document.getElementById('f-run').value = '';"
                      "document.getElementById('f-status').value = 'errored';"
                      "document.getElementById('f-status').dispatchEvent(new Event('change'))")
        badges = page.evaluate("Array.from(document.querySelectorAll('#ep-list .ep-item .badge')).map(b => b.textContent)")
        assert badges and set(badges) == {"errored"}
        page.evaluate("document.querySelector('#ep-list .ep-item').click()")
        page.poll("document.querySelector('#ep-detail .error-box') !== null")
        assert "verifier" in page.evaluate("document.querySelector('#ep-detail .error-box').textContent")

        # a flipped task's link in the trace diff opens that episode in the viewer
        link = page.evaluate("(() => { const a = document.querySelector('#trace-diff a[href^=\"#ep=\"]');"
                             " return a ? a.getAttribute('href') : null; })()")
        assert link is not None
        page.evaluate(f"document.querySelector('#trace-diff a[href=\"{link}\"]').click()")
        page.poll(f"document.querySelector('.ep-item.active') !== null || location.hash === {json.dumps(link)}")

        height = page.evaluate("document.documentElement.scrollHeight")
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(ARTIFACTS / "report.png", {"x": 0, "y": 0, "width": 1360, "height": min(height, 16000)})

        errors = console_errors(page.events)
        urls = requested_urls(page.events)
    assert errors == []
    assert page_url in urls  # the network log works: it saw the page itself
    assert [u for u in urls if u != page_url and not u.startswith("data:")] == []
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000
    assert os.path.getsize(ARTIFACTS / "report-viewer.png") > 5_000


@pytest.mark.slow
def test_the_browser_checks_catch_requests_and_errors(tmp_path: Path) -> None:
    """The same probes on a page that misbehaves: they must see its request and its errors."""
    binary = chromium_binary()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); .ci/run installs it")
    page_path = tmp_path / "bad.html"
    page_path.write_text('<!doctype html><html><head><link rel="icon" href="data:,"></head><body>'
                         '<img src="http://127.0.0.1:9/pixel.png"><script>console.error("boom");'
                         'undefinedFunction();</script></body></html>')
    with chromium_page(binary) as page:
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call("Page.navigate", url=page_path.as_uri())
        page.wait_for("Page.loadEventFired")
        errors = console_errors(page.events)
        urls = requested_urls(page.events)
    assert "http://127.0.0.1:9/pixel.png" in urls
    assert any("boom" in e for e in errors) and any("undefinedFunction" in e for e in errors)


@pytest.mark.slow
def test_a_run_folder_without_episodes_renders_cleanly(tmp_path: Path) -> None:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium); .ci/run installs it")
    (tmp_path / "summary.json").write_text(json.dumps({"stages": {"build tasks": 1.5, "validate": {"seconds": 3}}}))
    _, html_path = write_report(tmp_path)
    with chromium_page(binary) as page:
        for domain in ("Page", "Runtime", "Log", "Network"):
            page.call(f"{domain}.enable")
        page.call("Page.navigate", url=html_path.resolve().as_uri())
        page.wait_for("Page.loadEventFired")
        assert page.evaluate("document.querySelectorAll('#stages svg.chart').length") == 1
        assert "No results.jsonl found" in page.evaluate("document.getElementById('results').textContent")
        errors = console_errors(page.events)
    assert errors == []
