// The Alerts and feeds page: the query checked as you type (debounced, the error marked at
// its position as the constraint box marks it), the gallery filling the editor, each
// subscription's live feed over the WebSocket, and the backtest's chart with its markers.
//
// Feeds: the server draws each feed from the outbox up to the subscription's last n and
// puts the newest n drawn in data-after; this script resumes sub:<id> after it, so what
// was committed while the page was away is already on the page and what comes later
// arrives once, in n order. A frame at or below the feed's position is a repeat and is
// dropped. After a dropped connection it resumes after the last n shown. sessionStorage
// remembers the last n the user has seen per subscription, to mark what is new since.

import { Live } from "intersect/live";
import { checkAsYouType, escapeHtml, lineColumn, postJson } from "intersect/posting";

const FEED_MAX = 200; // items one feed keeps on the page
const SEEN_KEY = "intersect:alerts:seen:";

// -- the editor --------------------------------------------------------------------------

// What the check warns of in a valid query (a subject pattern no market matches yet): shown
// under it, each with its line and column; the query may still be saved.
function warningsHtml(warnings, text) {
  return warnings
    .map((warning) => {
      let where = "";
      if (typeof warning.position === "number") {
        const { line, column } = lineColumn(text, warning.position);
        where = ` <span class="where">(line ${line}, column ${column})</span>`;
      }
      return (
        `<p class="check-warn" data-warning-code="${escapeHtml(String(warning.code || ""))}"` +
        (typeof warning.position === "number" ? ` data-warning-position="${warning.position}"` : "") +
        `><strong>Warning:</strong> ${escapeHtml(warning.message)}${where}</p>`
      );
    })
    .join("");
}

function setupEditor() {
  const form = document.querySelector("form.alert-editor");
  if (!form) return null;
  const area = form.querySelector("[data-query]");
  const status = form.querySelector("[data-check-status]");
  const url = form.dataset.checkUrl;
  const box = checkAsYouType({
    area,
    mirror: form.querySelector("[data-mirror]"),
    status,
    request: (text, signal) => postJson(url, { query: text }, signal),
    okHtml: (body) =>
      `<p class="check-ok"><span aria-hidden="true">✓</span> Valid (${escapeHtml(body.kind)}). It saves as:</p>` +
      `<pre class="constraint-preview">${escapeHtml(body.query)}</pre>` +
      warningsHtml(body.warnings || [], area.value),
    invalidText: "This query is not valid.",
    unknownText: "Could not check right now; the server checks again when you save.",
  });
  // A query put in by the page (?query=, an example): check it at once, keeping the
  // server's marks when it refused a save.
  if (area.value.trim() && !status.innerHTML.trim()) box.check();

  return {
    fill(query, name) {
      area.value = query;
      form.querySelector('[name="name"]').value = name;
      box.paint(null);
      document.getElementById("editor")?.scrollIntoView({ block: "start" });
      area.focus();
      box.check();
    },
  };
}

function setupGallery(editor) {
  document.getElementById("gallery")?.addEventListener("click", (event) => {
    const link = event.target.closest("[data-example-query]");
    if (!link || !editor) return;
    event.preventDefault();
    editor.fill(link.dataset.exampleQuery, link.dataset.exampleName);
  });
}

// -- the feeds ---------------------------------------------------------------------------

// A notification's data as (key, value) pairs, keys sorted, a nested alias's attributes
// as alias.attr: frontend/views/alerts.py (data_items) draws the page's ones the same way.
function dataItems(data, prefix = "") {
  if (data === null || typeof data !== "object") return [[prefix || "value", data == null ? "—" : String(data)]];
  const items = [];
  for (const key of Object.keys(data).sort()) {
    const value = data[key];
    if (value !== null && typeof value === "object") items.push(...dataItems(value, `${prefix}${key}.`));
    else items.push([`${prefix}${key}`, value == null ? "—" : String(value)]);
  }
  return items;
}

function noteItem(frame, fresh = true) {
  const item = document.createElement("li");
  const failed = frame.data && typeof frame.data === "object" && "error" in frame.data;
  item.className = `alert-note alert-note-${failed ? "bad" : "info"}${fresh ? " alert-note-new" : ""}`;
  item.dataset.n = String(frame.n);
  const n = document.createElement("span");
  n.className = "alert-n";
  n.textContent = `#${frame.n}`;
  item.append(n);
  for (const [key, value] of dataItems(frame.data)) {
    const kv = document.createElement("span");
    kv.className = "alert-kv";
    const k = document.createElement("span");
    k.className = "alert-k";
    k.textContent = key;
    const v = document.createElement("span");
    v.className = "alert-v";
    v.textContent = value;
    kv.append(k, " ", v);
    item.append(" ", kv);
  }
  return item;
}

// A row the server drew (frontend/alert_notes.py: the event's time, its market, units).
function rowFrom(html) {
  const holder = document.createElement("ol");
  holder.innerHTML = html; // the server escapes the text in it
  return holder.firstElementChild;
}

const PULL_DELAY_MS = 100; // a burst of frames is fetched as one page
const PULL_PAGE = 100;

class Feed {
  constructor(list) {
    this.list = list;
    this.stream = list.dataset.stream;
    this.id = list.dataset.subscription;
    this.notesUrl = list.dataset.notes;
    this.position = Number(list.dataset.after || 0); // the newest n shown
    this.wanted = this.position; // the newest n announced by a frame
    this.frames = new Map(); // announced, not shown yet: drawn as they came if fetching fails
    this.timer = null;
    this.pulling = false;
    this.item = list.closest(".alert-item");
    // What arrived since the user last looked (stored by the last page that showed it).
    const seen = Number(sessionStorage.getItem(SEEN_KEY + this.id) ?? this.position);
    for (const li of list.querySelectorAll("[data-n]")) {
      if (Number(li.dataset.n) > seen) li.classList.add("alert-note-new");
    }
    this.remember();
  }

  remember() {
    try {
      sessionStorage.setItem(SEEN_KEY + this.id, String(this.position));
    } catch {
      // storage full or refused: only the "new" marks are lost
    }
  }

  add(frame) {
    if (typeof frame.n !== "number" || frame.n <= this.wanted) return; // announced already
    this.wanted = frame.n;
    this.frames.set(frame.n, frame);
    if (!this.timer && !this.pulling) this.timer = setTimeout(() => this.pull(), PULL_DELAY_MS);
  }

  // Fetch the rows after the newest shown up to the newest announced, in n order, and show
  // each once; if the server cannot be asked, the frames' own data is shown instead.
  async pull() {
    this.timer = null;
    this.pulling = true;
    try {
      while (this.wanted > this.position) {
        const from = this.position;
        let notes = null;
        try {
          const response = await fetch(`${this.notesUrl}?after=${from}&limit=${Math.min(PULL_PAGE, this.wanted - from)}`, {
            credentials: "same-origin",
            headers: { Accept: "application/json" },
          });
          if (response.ok) notes = (await response.json()).notes;
        } catch {
          notes = null;
        }
        if (!notes?.length) {
          for (const n of [...this.frames.keys()].sort((a, b) => a - b)) {
            if (n > this.position) this.place(n, noteItem(this.frames.get(n)));
          }
          break;
        }
        for (const note of notes) if (note.n > this.position) this.place(note.n, rowFrom(note.html));
      }
    } finally {
      this.pulling = false;
    }
  }

  place(n, row) {
    this.frames.delete(n);
    if (!row) return;
    row.classList.add("alert-note-new");
    this.position = n;
    this.list.dataset.after = String(n);
    this.list.prepend(row);
    while (this.list.children.length > FEED_MAX) this.list.lastElementChild.remove();
    this.item?.querySelector("[data-feed-empty]")?.setAttribute("hidden", "");
    const count = this.item?.querySelector("[data-count]");
    if (count) count.textContent = String(n);
    this.remember();
  }

  end() {
    this.list.removeAttribute("data-follow");
    if (!this.item) return;
    this.item.dataset.state = "done";
    const badge = this.item.querySelector("[data-state-badge]");
    if (badge) {
      badge.textContent = "done";
      badge.className = "badge badge-state state-done";
    }
  }
}

// The page's feeds on one connection (live.js's Live, which reconnects with backoff):
// each followed feed is resumed after its position on every (re)connect.
function followFeeds(lists) {
  const feeds = new Map(lists.map((list) => [list.dataset.stream, new Feed(list)]));
  const following = () =>
    [...feeds.values()].filter((feed) => feed.list.hasAttribute("data-follow"));
  if (!following().length) return null;
  const live = new Live({
    resumes: () => following().map((feed) => ({ stream: feed.stream, after: feed.position })),
    onFrame: (frame) => {
      const feed = feeds.get(frame.stream);
      if (!feed) return;
      if (frame.type === "notification") feed.add(frame);
      else if (frame.type === "end") feed.end();
      else if (frame.type === "error" && frame.code === "replay_limit") {
        live.send({ action: "resume", stream: feed.stream, after: feed.position });
      } else if (frame.type === "error") console.warn("feed:", frame.stream, frame.code, frame.message);
    },
  });
  live.start();
  return live;
}

// "Show older": the outbox before the oldest notification a feed shows, a page at a time
// (GET /alerts/<id>/notes/?after=&limit=, drawn as the page draws them), added
// under it; gone once the feed reaches n = 1.
const OLDER_PAGE = 30;

function setupOlder() {
  for (const button of document.querySelectorAll("[data-older]")) {
    const list = document.getElementById(button.dataset.feed);
    if (!list) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      const items = list.querySelectorAll("[data-n]");
      const oldest = Number(items[items.length - 1]?.dataset.n || 1);
      const after = Math.max(0, oldest - 1 - OLDER_PAGE);
      button.disabled = true;
      try {
        const response = await fetch(`${button.dataset.older}?after=${after}&limit=${oldest - 1 - after}`, {
          credentials: "same-origin",
          headers: { Accept: "application/json" },
        });
        if (!response.ok) return;
        const { notes } = await response.json();
        for (const note of notes.filter((r) => r.n < oldest).reverse()) {
          const row = rowFrom(note.html);
          if (row) list.append(row);
        }
        if (after === 0) button.remove();
      } catch {
        // offline: the button stays for another try
      } finally {
        button.disabled = false;
      }
    });
  }
}

// -- the backtest's chart ----------------------------------------------------------------

async function drawBacktest(root = document) {
  const el = root.querySelector("[data-backtest-chart]");
  if (!el || el.dataset.drawn) return;
  let data;
  try {
    data = JSON.parse(document.getElementById(el.dataset.source).textContent);
  } catch {
    return;
  }
  const [{ createSeriesMarkers, LineSeries }, { baseChart, priceFormat }] = await Promise.all([
    import("lightweight-charts"),
    import("intersect/charts"),
  ]);
  const chart = baseChart(el, true);
  const series = chart.addSeries(LineSeries, {
    color: "#2563eb",
    lineWidth: 2,
    pointMarkersVisible: true,
    priceFormat: priceFormat(data),
  });
  series.setData(data.points || []);
  const markers = (data.markers || []).map((m) => ({
    time: m.time,
    position: "aboveBar",
    shape: "arrowDown",
    color: "#d97706",
    text: m.text,
  }));
  createSeriesMarkers(series, markers);
  chart.timeScale().fitContent();
  el.dataset.drawn = String((data.points || []).filter((p) => "value" in p).length);
  el.dataset.markers = String(markers.length);
}

// -- wiring -----------------------------------------------------------------------------

const editor = setupEditor();
setupGallery(editor);
const live = followFeeds([...document.querySelectorAll("ol.alert-feed[data-stream]")]);
setupOlder();
drawBacktest();
document.addEventListener("htmx:afterSwap", (event) => {
  if (event.target.id === "backtest-result") drawBacktest(event.target);
});
window.intersectAlerts = { live };
