// Wires each page: its live connection, live values, regions, charts, notifications and
// posting forms. Pages declare what they follow in data-* attributes (see base.html).

import { alertFollower } from "intersect/alertbell";
import { Live, Regions } from "intersect/live";
import { resortTables, sortTables } from "intersect/sort";

document.documentElement.classList.add("js");

const body = document.body;
const statusEl = document.getElementById("live-status");
const toasts = document.getElementById("toasts");
const unread = document.getElementById("unread");
let charts = null;

function loadCharts() {
  if (!document.querySelector("[data-chart]")) return;
  charts = import("intersect/charts").then((module) => {
    module.mountCharts();
    return module;
  });
}

function setStatus(state, delay) {
  if (!statusEl) return;
  statusEl.dataset.state = state;
  const label = statusEl.querySelector(".label");
  if (state === "open") label.textContent = "Live";
  else if (state === "connecting") label.textContent = "Connecting…";
  else label.textContent = delay ? `Reconnecting in ${Math.max(1, Math.round(delay / 1000))} s…` : "Reconnecting…";
}

function flash(el) {
  el.classList.remove("flash");
  void el.offsetWidth; // restart the animation
  el.classList.add("flash");
}

// A best_offer frame: patch the offer's best value and bid count wherever they show (and
// keep sorted tables in order).
function patchBest(data) {
  if (data.offer == null) return;
  let changed = false;
  const patch = (selector, text) => {
    for (const el of document.querySelectorAll(selector)) {
      if (el.textContent !== text) {
        el.textContent = text;
        flash(el);
        changed = true;
      }
    }
  };
  patch(`[data-best-value="${data.offer}"]`, data.best_value ?? "—");
  if (data.matching_bids != null) patch(`[data-bid-count="${data.offer}"]`, String(data.matching_bids));
  if (changed) resortTables();
}

function toast(text, tone, alert = null) {
  if (!toasts) return;
  const item = document.createElement("div");
  item.className = `toast toast-${tone}`;
  if (alert) {
    item.dataset.alert = String(alert.alert);
    item.dataset.n = String(alert.n);
  }
  item.setAttribute("role", tone === "bad" ? "alert" : "status");
  item.innerHTML = '<p></p><button type="button" class="toast-close" aria-label="Dismiss">✕</button>';
  item.querySelector("p").textContent = text;
  item.querySelector("button").addEventListener("click", () => item.remove());
  toasts.prepend(item);
  while (toasts.children.length > 4) toasts.lastElementChild.remove();
  setTimeout(() => item.remove(), 9000);
}

function addNote(frame, text, tone) {
  const list = document.getElementById("notes-list");
  if (list && !document.getElementById(`note-${frame.seq}`)) {
    const item = document.createElement("li");
    item.id = `note-${frame.seq}`;
    item.className = `note note-${tone} note-new`;
    item.dataset.type = frame.data.type;
    const span = document.createElement("span");
    span.className = "note-text";
    span.textContent = text;
    const time = document.createElement("time");
    const now = new Date();
    time.dateTime = now.toISOString();
    time.textContent = "just now";
    item.append(span, " ", time);
    list.prepend(item);
    document.getElementById("notes-empty")?.setAttribute("hidden", "");
  } else if (unread) {
    unread.textContent = String(Number(unread.textContent || 0) + 1);
    unread.hidden = false;
  }
}

const regions = new Regions({
  onSwap: async (swapped) => {
    for (const el of swapped) {
      paintSwatches(el);
      sortTables(el);
    }
    if (swapped.some((el) => el.querySelector('script[type="application/json"]'))) {
      if (!charts) loadCharts();
      (await charts)?.refreshCharts();
    }
  },
});

const alerts = alertFollower({ toast, onAlertsPage: location.pathname === "/alerts/" });

function onFrame(frame) {
  if (alerts.onFrame(frame, window.intersect?.live)) return; // a subscription's (sub:<id>)
  if (frame.type === "error") {
    console.warn("live:", frame.code, frame.message);
    return;
  }
  if (!frame.stream || frame.data == null) return; // subscribed / unsubscribed
  if (frame.stream === "me" && frame.type === "notification") {
    // The server wrote the sentence and its tone (exchange/notification_texts.py).
    const kind = frame.data.type;
    const { text, tone } = frame;
    if (kind === "best_offer") patchBest(frame.data);
    addNote(frame, text, tone);
    toast(text, tone);
    regions.request([`me:${kind}`]);
    return;
  }
  if (frame.type === "best_offer") patchBest(frame.data);
  regions.request([frame.type]);
}

// Auctions with a deadline count down to it (the time itself stays in the title). The
// server closes them; when the count reaches zero the page's live regions say so.
function countdownText(ms) {
  if (ms <= 0) return "closing now";
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d > 0) return `in ${d} d ${h} h`;
  if (h > 0) return `in ${h} h ${String(m).padStart(2, "0")} min`;
  return `in ${m} min ${String(s % 60).padStart(2, "0")} s`;
}

function tickCountdowns() {
  for (const el of document.querySelectorAll("time[data-countdown]")) {
    if (!el.title) el.title = el.textContent;
    el.textContent = countdownText(Date.parse(el.getAttribute("datetime")) - Date.now());
  }
}

function start() {
  loadCharts();
  tickCountdowns();
  setInterval(tickCountdowns, 1000);
  import("intersect/posting").then((m) => m.setupPosting());
  let streams = [];
  try {
    streams = JSON.parse(body.dataset.streams || "[]") || [];
  } catch {
    streams = [];
  }
  const live = new Live({
    streams,
    me: body.dataset.me === "1",
    after: Number(body.dataset.meSeq || 0),
    resumes: alerts.any ? alerts.resumes : null,
    onFrame,
    onStatus: setStatus,
    onSynced: () => regions.request("*"),
  });
  if (!streams.length && body.dataset.me !== "1") {
    statusEl?.setAttribute("hidden", "");
  }
  live.start();
  window.intersect = { live, regions };

  for (const input of document.querySelectorAll("[data-select-on-focus]")) {
    input.addEventListener("focus", () => input.select());
  }
}

// Forms that ask first (withdrawing): the question is in data-confirm, not in an inline
// handler, which the Content-Security-Policy would block.
document.addEventListener("submit", (event) => {
  const question = event.target.dataset?.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

// Legend swatches name their colour in data-swatch (an inline style attribute would be
// blocked by the Content-Security-Policy; a style set from a script is not).
function paintSwatches(root) {
  for (const el of root.querySelectorAll?.("[data-swatch]") || []) {
    el.style.background = el.dataset.swatch;
  }
}
paintSwatches(document);
sortTables(document);

// htmx swaps new content in (the token box): wire its inputs too.
document.addEventListener("htmx:afterSwap", (event) => {
  paintSwatches(event.target);
  sortTables(event.target);
  for (const input of event.target.querySelectorAll?.("[data-select-on-focus]") || []) {
    input.addEventListener("focus", () => input.select());
  }
});

start();
