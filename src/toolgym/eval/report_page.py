"""The HTML shell of report.html: inline CSS and JS, a strict CSP, and the trajectory viewer.

Everything the page needs is in the one file: styles, script, charts (inline SVG) and episode data
(JSON in a script tag). The Content-Security-Policy forbids every network fetch, so a page that
tried one would fail loudly in the console instead of leaking a request.
"""

from __future__ import annotations

import html
import json
from typing import Any

CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "font-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
)

CSS = r"""
:root {
  --ink: #1f2933; --muted: #616e7c; --faint: #9aa5b1; --line: #e4e7eb; --bg: #f5f7fa; --card: #fff;
  --accent: #3e6fb0; --pass: #2f855a; --pass-bg: #e6f4ea; --fail: #c53030; --fail-bg: #fdecec;
  --warn: #b7791f; --warn-bg: #fdf6e3; --err: #6b46c1; --err-bg: #f1ebfd; --code: #f0f3f7;
}
* { box-sizing: border-box; }
html { scroll-behavior: smooth; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.55 -apple-system, BlinkMacSystemFont, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
.wrap { max-width: 1180px; margin: 0 auto; padding: 0 28px; }
header.top { background: #17212b; color: #e9eef3; padding: 26px 0 0; }
header.top .brand { font-size: 12px; letter-spacing: .12em; text-transform: uppercase; color: #9fb3c8; }
header.top h1 { margin: 4px 0 6px; font-size: 28px; font-weight: 650; letter-spacing: -.01em; }
header.top .meta { margin: 0 0 16px; color: #b6c3d1; font-size: 13px; }
header.top .meta code { color: #e9eef3; background: rgba(255,255,255,.08); }
nav.sections { display: flex; gap: 4px; flex-wrap: wrap; padding-bottom: 10px; }
nav.sections a { color: #d3dde7; text-decoration: none; font-size: 13px; padding: 5px 10px; border-radius: 6px; }
nav.sections a:hover { background: rgba(255,255,255,.1); color: #fff; }
main.wrap { padding-top: 28px; padding-bottom: 64px; }
section.block { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 22px 26px;
  margin: 0 0 22px; }
section.block > h2 { margin: 0 0 4px; font-size: 20px; font-weight: 650; }
section.block > p.lead { margin: 0 0 16px; color: var(--muted); max-width: 820px; }
h3 { font-size: 16px; margin: 22px 0 8px; }
h4 { font-size: 14px; margin: 18px 0 8px; color: var(--ink); }
p { max-width: 860px; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px; }
code { background: var(--code); padding: 1px 5px; border-radius: 4px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(210px, 1fr)); gap: 14px; margin: 0 0 22px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; padding: 14px 16px; }
.card .label { font-size: 12px; color: var(--muted); text-transform: uppercase; letter-spacing: .06em; }
.card .value { font-size: 26px; font-weight: 650; font-variant-numeric: tabular-nums; margin-top: 2px; }
.card .sub { font-size: 12.5px; color: var(--muted); font-variant-numeric: tabular-nums; }
.table-wrap { overflow-x: auto; margin: 6px 0 18px; }
table { border-collapse: collapse; width: auto; min-width: 60%; font-size: 13.5px; font-variant-numeric: tabular-nums; }
th { text-align: left; font-weight: 600; color: var(--muted); font-size: 12px; text-transform: uppercase;
  letter-spacing: .04em; border-bottom: 2px solid var(--line); padding: 8px 10px; white-space: nowrap; }
td { border-bottom: 1px solid var(--line); padding: 7px 10px; vertical-align: top; }
th.r, td.r { text-align: right; }
th.l, td.l { text-align: left; }
td.r, td:first-child { white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fafbfc; }
tbody tr:hover td { background: #f0f4f8; }
tr.total td { font-weight: 650; border-top: 2px solid var(--line); }
.num { font-weight: 600; }
.muted { color: var(--faint); font-size: 12px; }
ul.notes { margin: 8px 0 0; padding-left: 18px; color: var(--muted); font-size: 12.5px; max-width: 900px; }
ul.notes li { margin: 2px 0; }
figure { margin: 10px 0 18px; }
figure svg.chart { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 12.5px; color: var(--muted); margin-top: 4px; }
.callout { border-left: 4px solid var(--accent); background: #eef4fb; padding: 10px 14px; border-radius: 6px;
  margin: 10px 0 16px; font-size: 14px; }
.callout.bad { border-color: var(--fail); background: var(--fail-bg); }
.callout.good { border-color: var(--pass); background: var(--pass-bg); }
.empty { color: var(--muted); font-style: italic; }
details.raw summary { cursor: pointer; color: var(--accent); font-size: 13.5px; }
details.raw pre { background: var(--code); padding: 12px; border-radius: 6px; overflow: auto; max-height: 420px; }
a { color: var(--accent); }
/* trajectory viewer */
.viewer { display: grid; grid-template-columns: 360px 1fr; gap: 16px; min-height: 520px; }
.filters { display: grid; grid-template-columns: repeat(4, minmax(0, 1fr)); gap: 10px; margin: 0 0 12px; }
.filters label { font-size: 11.5px; color: var(--muted); text-transform: uppercase; letter-spacing: .05em; display: block; }
.filters select, .filters input { width: 100%; margin-top: 3px; padding: 6px 8px; border: 1px solid #cbd2d9;
  border-radius: 6px; font: inherit; font-size: 13.5px; background: #fff; color: var(--ink); }
.ep-count { font-size: 12.5px; color: var(--muted); margin: 0 0 6px; }
.ep-list { border: 1px solid var(--line); border-radius: 8px; max-height: 760px; overflow-y: auto; background: #fff; }
.ep-item { display: block; width: 100%; text-align: left; border: 0; border-bottom: 1px solid var(--line);
  background: #fff; padding: 8px 10px; cursor: pointer; font: inherit; color: var(--ink); }
.ep-item:hover { background: #f0f4f8; }
.ep-item.active { background: #e3ecf7; box-shadow: inset 3px 0 0 var(--accent); }
.ep-item .t { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; word-break: break-all; }
.ep-item .s { font-size: 11.5px; color: var(--muted); margin-top: 2px; }
.badge { display: inline-block; font-size: 11px; font-weight: 650; padding: 1px 7px; border-radius: 999px;
  margin-right: 6px; vertical-align: 1px; text-transform: uppercase; letter-spacing: .03em; }
.badge.passed { background: var(--pass-bg); color: var(--pass); }
.badge.failed { background: var(--fail-bg); color: var(--fail); }
.badge.truncated { background: var(--warn-bg); color: var(--warn); }
.badge.errored { background: var(--err-bg); color: var(--err); }
.ep-detail { border: 1px solid var(--line); border-radius: 8px; padding: 16px 18px; background: #fff; min-width: 0; }
.ep-detail h3 { margin: 0 0 6px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 15px;
  word-break: break-all; }
.facts { display: flex; flex-wrap: wrap; gap: 6px 18px; font-size: 12.5px; color: var(--muted); margin: 6px 0 12px; }
.facts b { color: var(--ink); font-weight: 600; }
.error-box { background: var(--err-bg); color: #44337a; border-radius: 6px; padding: 8px 12px; font-size: 13px;
  margin: 0 0 12px; white-space: pre-wrap; word-break: break-word; }
.checks { list-style: none; padding: 0; margin: 0 0 14px; }
.checks li { padding: 5px 10px; border-radius: 6px; margin: 3px 0; font-size: 13px; }
.checks li.check-pass { background: var(--pass-bg); }
.checks li.check-fail { background: var(--fail-bg); }
.checks .mark { font-weight: 700; margin-right: 6px; }
.checks li.check-pass .mark { color: var(--pass); }
.checks li.check-fail .mark { color: var(--fail); }
.checks .detail { color: var(--muted); font-size: 12px; }
.msg { border: 1px solid var(--line); border-radius: 8px; margin: 8px 0; overflow: hidden; }
.msg > .role { font-size: 11px; font-weight: 700; text-transform: uppercase; letter-spacing: .06em; padding: 4px 10px;
  background: #f5f7fa; color: var(--muted); border-bottom: 1px solid var(--line); }
.msg.assistant > .role { background: #eaf1fb; color: var(--accent); }
.msg.tool > .role { background: #f3f0fb; color: var(--err); }
.msg.user > .role { background: #edf7ee; color: var(--pass); }
.msg .body { padding: 8px 12px; white-space: pre-wrap; word-break: break-word; font-size: 13.5px; }
.msg details > summary { padding: 6px 12px; cursor: pointer; color: var(--muted); font-size: 12.5px; }
.tool-call { margin: 6px 12px 10px; border: 1px solid #c9d8ec; border-radius: 6px; background: #f7faff; }
.tool-call .tool-name { display: block; padding: 4px 10px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12.5px; font-weight: 650; color: var(--accent); border-bottom: 1px solid #dbe5f3; }
.tool-call pre, .tool-result pre { margin: 0; padding: 6px 10px; white-space: pre-wrap; word-break: break-word; }
.tool-result pre { font-size: 12px; max-height: 280px; overflow-y: auto; }
.final { background: var(--code); border-radius: 6px; padding: 8px 12px; white-space: pre-wrap; font-size: 13.5px; }
@media (max-width: 900px) { .viewer { grid-template-columns: 1fr; } .filters { grid-template-columns: 1fr 1fr; } }
"""

JS = r"""
(function () {
  "use strict";
  var source = document.getElementById("episodes-data");
  if (!source || !document.getElementById("ep-list")) { return; }  // no episodes: no viewer on the page
  var data = JSON.parse(source.textContent);
  var episodes = data.episodes || [];
  var byId = {};
  episodes.forEach(function (e) { byId[e.id] = e; });
  var list = document.getElementById("ep-list");
  var detail = document.getElementById("ep-detail");
  var count = document.getElementById("ep-count");
  var fRun = document.getElementById("f-run"), fEnv = document.getElementById("f-env");
  var fStatus = document.getElementById("f-status"), fTask = document.getElementById("f-task");
  var current = null;

  function node(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) { n.className = cls; }
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    return n;
  }
  function unique(values) {
    var seen = {}, out = [];
    values.forEach(function (v) { if (!seen[v]) { seen[v] = true; out.push(v); } });
    return out;
  }
  function fill(select, values) {
    values.forEach(function (v) { var o = node("option", null, v); o.value = v; select.appendChild(o); });
  }
  fill(fRun, unique(episodes.map(function (e) { return e.run; })));
  fill(fEnv, unique(episodes.map(function (e) { return e.env; })).sort());

  function matches(e) {
    var task = fTask.value.trim().toLowerCase();
    return (!fRun.value || e.run === fRun.value) && (!fEnv.value || e.env === fEnv.value) &&
      (!fStatus.value || e.outcome === fStatus.value) && (!task || e.task.toLowerCase().indexOf(task) >= 0);
  }

  function renderList() {
    var shown = episodes.filter(matches);
    list.replaceChildren();
    count.textContent = shown.length + " of " + episodes.length + " episodes";
    shown.slice(0, 1000).forEach(function (e) {
      var item = node("button", "ep-item" + (e.id === current ? " active" : ""));
      item.type = "button";
      item.setAttribute("data-id", e.id);
      var top = node("div", "t");
      top.appendChild(node("span", "badge " + e.outcome, e.outcome));
      top.appendChild(document.createTextNode(e.task));
      item.appendChild(top);
      item.appendChild(node("div", "s", e.run + " · " + e.env + " · " + (e.trial ? e.trial + " · " : "") +
        "sample " + e.sample + " · " + e.turns + " turn(s)"));
      item.addEventListener("click", function () { location.hash = "ep=" + encodeURIComponent(e.id); });
      list.appendChild(item);
    });
    if (!shown.length) { list.appendChild(node("div", "empty", "No episode matches these filters.")); }
  }

  function fact(parent, label, value) {
    var span = node("span", null, label + " ");
    span.appendChild(node("b", null, value));
    parent.appendChild(span);
  }

  function renderMessage(m) {
    var box = node("div", "msg " + m.role);
    box.appendChild(node("div", "role", m.role + (m.name ? " · " + m.name : "")));
    var holder = box;
    if (m.role === "system") {
      var d = node("details");
      d.appendChild(node("summary", null, "system prompt (" + (m.content || "").length + " characters)"));
      box.appendChild(d);
      holder = d;
    }
    if (m.reasoning) { holder.appendChild(node("div", "body muted", m.reasoning)); }
    if (m.content) {
      if (m.role === "tool") {
        var result = node("div", "tool-result");
        result.appendChild(node("pre", null, m.content));
        holder.appendChild(result);
      } else {
        holder.appendChild(node("div", "body", m.content));
      }
    }
    (m.tool_calls || []).forEach(function (c) {
      var call = node("div", "tool-call");
      call.appendChild(node("span", "tool-name", "→ " + c.name));
      call.appendChild(node("pre", null, c.arguments));
      holder.appendChild(call);
    });
    return box;
  }

  function show(id) {
    var e = byId[id];
    if (!e) { return; }
    current = id;
    if (!matches(e)) {  // opened by a link while filtered out: clear the filters so it is listed
      fRun.value = ""; fEnv.value = ""; fStatus.value = ""; fTask.value = "";
      renderList();
    }
    detail.replaceChildren();
    var title = node("h3", null, e.task);
    detail.appendChild(title);
    var badges = node("div");
    badges.appendChild(node("span", "badge " + e.outcome, e.outcome));
    detail.appendChild(badges);
    var facts = node("div", "facts");
    fact(facts, "run", e.run);
    if (e.trial) { fact(facts, "trial", e.trial); }
    fact(facts, "sample", e.sample);
    fact(facts, "env", e.env);
    fact(facts, "split", e.split);
    fact(facts, "stop", e.stop);
    fact(facts, "turns", e.turns);
    fact(facts, "reward", e.reward === null ? "none (errored)" : e.reward);
    fact(facts, "partial score", e.partial === null ? "none" : e.partial);
    fact(facts, "row", e.where);
    detail.appendChild(facts);
    if (e.error) { detail.appendChild(node("div", "error-box", e.error)); }
    detail.appendChild(node("h4", null, "Checks (" + e.checks.filter(function (c) { return c.passed; }).length +
      "/" + e.checks.length + " passed)"));
    var checks = node("ul", "checks");
    if (!e.checks.length) { checks.appendChild(node("li", null, "no verdict (the episode errored before verification)")); }
    e.checks.forEach(function (c) {
      var li = node("li", c.passed ? "check-pass" : "check-fail");
      li.appendChild(node("span", "mark", c.passed ? "✓ pass" : "✗ fail"));
      li.appendChild(document.createTextNode(c.label + " "));
      if (c.detail) { li.appendChild(node("span", "detail", "— " + c.detail)); }
      checks.appendChild(li);
    });
    detail.appendChild(checks);
    detail.appendChild(node("h4", null, "Conversation (" + e.messages.length + " messages)"));
    e.messages.forEach(function (m) { detail.appendChild(renderMessage(m)); });
    detail.appendChild(node("h4", null, "Final answer"));
    detail.appendChild(node("div", "final", e.final_answer || "(none)"));
    Array.prototype.forEach.call(list.querySelectorAll(".ep-item"), function (item) {
      item.classList.toggle("active", item.getAttribute("data-id") === id);
    });
  }

  function fromHash() {
    var hash = location.hash || "";
    if (hash.indexOf("#ep=") === 0) {
      var id = decodeURIComponent(hash.slice(4));
      if (byId[id]) {
        show(id);
        var viewer = document.getElementById("trajectories");
        if (viewer && viewer.getBoundingClientRect().top > window.innerHeight) { viewer.scrollIntoView(); }
        return true;
      }
    }
    return false;
  }

  [fRun, fEnv, fStatus].forEach(function (s) { s.addEventListener("change", renderList); });
  fTask.addEventListener("input", renderList);
  window.addEventListener("hashchange", fromHash);
  renderList();
  if (!fromHash()) {
    var first = episodes.filter(function (e) { return e.tool_call_count > 0; })[0] || episodes[0];
    if (first) { show(first.id); }
  }
})();
"""


def embed_json(data: Any) -> str:
    """JSON safe inside a <script> element: every '<' escaped, so no '</script>' can end it early."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def page(title: str, meta_html: str, nav: list[tuple[str, str]], body_html: str, episodes: dict[str, Any]) -> str:
    """The whole self-contained document."""
    links = "".join(f'<a href="#{html.escape(anchor)}">{html.escape(label)}</a>' for anchor, label in nav)
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<link rel="icon" href="data:,">'
        f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        '<header class="top"><div class="wrap"><div class="brand">toolgym report</div>'
        f"<h1>{html.escape(title)}</h1><p class=\"meta\">{meta_html}</p>"
        f'<nav class="sections">{links}</nav></div></header>'
        f'<main class="wrap">{body_html}</main>'
        f'<script id="episodes-data" type="application/json">{embed_json(episodes)}</script>'
        f"<script>{JS}</script></body></html>\n"
    )


VIEWER_HTML = """
<div class="filters">
  <div><label for="f-run">Run</label><select id="f-run"><option value="">all runs</option></select></div>
  <div><label for="f-env">Environment</label><select id="f-env"><option value="">all environments</option></select></div>
  <div><label for="f-status">Status</label><select id="f-status"><option value="">any status</option>
    <option value="passed">passed</option><option value="failed">failed</option>
    <option value="truncated">truncated</option><option value="errored">errored</option></select></div>
  <div><label for="f-task">Task</label><input id="f-task" type="search" placeholder="task id contains…"></div>
</div>
<div class="viewer">
  <div><p class="ep-count" id="ep-count"></p><div class="ep-list" id="ep-list"></div></div>
  <div class="ep-detail" id="ep-detail"><p class="empty">Choose an episode.</p></div>
</div>
"""
