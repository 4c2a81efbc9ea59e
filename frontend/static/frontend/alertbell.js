// Alerts on every page (issue 39): the page's own live connection (app.js's Live) also
// follows the user's active and paused subscriptions (<body data-alerts>, each with the
// last n when the page was read), resumed after what it has seen on every (re)connect. A
// notification becomes a toast ("my alert: #4 · Nov 28, 12:03:05 UTC · Pencils · price
// 1.20 EUR"), counts in the header's badge beside "Alerts and feeds" until the user opens
// that page, and goes into the account page's list when it is open. The words come from
// the server (/alerts/<id>/notes/, frontend/alert_notes.py), as the feeds draw them.
//
// Read marks live in localStorage per subscription (the last n seen on /alerts/), so the
// badge is the same in every tab; a subscription seen for the first time starts read.

const READ_KEY = "intersect:alerts:read:";
const PULL_DELAY_MS = 150; // a burst of frames is fetched as one page
const PAGE = 100;

function readMark(id) {
  try {
    const value = localStorage.getItem(READ_KEY + id);
    return value == null ? null : Number(value);
  } catch {
    return null;
  }
}

function setReadMark(id, n) {
  try {
    localStorage.setItem(READ_KEY + id, String(n));
  } catch {
    // storage refused: the badge only forgets what was read
  }
}

export function alertFollower({ toast, onAlertsPage = false }) {
  let followed = [];
  try {
    followed = JSON.parse(document.body.dataset.alerts || "[]") || [];
  } catch {
    followed = [];
  }
  const subs = new Map(
    followed.map((s) => [`sub:${s.id}`, { id: s.id, name: s.name || `Subscription ${s.id}`, position: s.after, shown: s.after, timer: null }]),
  );
  const badge = document.getElementById("alerts-unread");

  for (const sub of subs.values()) {
    if (onAlertsPage || readMark(sub.id) == null) setReadMark(sub.id, sub.position);
  }

  function paint() {
    if (!badge) return;
    let count = 0;
    for (const sub of subs.values()) count += Math.max(0, sub.position - (readMark(sub.id) ?? sub.position));
    badge.textContent = String(count);
    badge.hidden = count === 0;
    badge.setAttribute("aria-label", `${count} new alert notification${count === 1 ? "" : "s"}`);
    badge.dataset.count = String(count);
  }
  paint();
  window.addEventListener("storage", (event) => {
    if (event.key?.startsWith(READ_KEY)) paint(); // read in another tab
  });

  function addToAccount(sub, note) {
    const list = document.getElementById("alert-notes-list");
    if (!list || list.querySelector(`[data-subscription="${sub.id}"][data-n="${note.n}"]`)) return;
    const holder = document.createElement("ol");
    holder.innerHTML = note.html; // the server's rendering: text is escaped there
    const item = holder.firstElementChild;
    if (!item) return;
    item.dataset.subscription = String(sub.id);
    item.classList.add("alert-note-new");
    const link = document.createElement("a");
    link.className = "alert-recent-name";
    link.href = `/alerts/#sub-${sub.id}`;
    link.textContent = sub.name;
    item.prepend(link, " ");
    list.prepend(item);
    document.getElementById("alert-notes-empty")?.setAttribute("hidden", "");
  }

  // Fetch what came after the last one shown (up to the newest frame), toast each once.
  async function pull(sub) {
    sub.timer = null;
    const from = sub.shown;
    const upto = sub.position;
    if (upto <= from) return;
    try {
      const response = await fetch(`/alerts/${sub.id}/notes/?after=${from}&limit=${Math.min(PAGE, upto - from)}`, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (!response.ok) return;
      const { notes } = await response.json();
      for (const note of notes) {
        if (note.n <= sub.shown) continue;
        sub.shown = note.n;
        toast(`${sub.name}: ${note.text}`, note.tone === "bad" ? "bad" : "info", { alert: sub.id, n: note.n });
        addToAccount(sub, note);
      }
    } catch {
      return; // offline: the next frame or reconnect asks again
    }
    if (sub.position > sub.shown && !sub.timer) sub.timer = setTimeout(() => pull(sub), PULL_DELAY_MS);
  }

  return {
    any: subs.size > 0,
    resumes: () => [...subs.entries()].map(([stream, sub]) => ({ stream, after: sub.position })),
    // True when the frame was one of the followed subscriptions' (handled here).
    onFrame(frame, live) {
      const sub = subs.get(frame.stream);
      if (!sub) return false;
      if (frame.type === "notification" && typeof frame.n === "number" && frame.n > sub.position) {
        sub.position = frame.n;
        if (onAlertsPage) setReadMark(sub.id, frame.n);
        paint();
        if (!sub.timer) sub.timer = setTimeout(() => pull(sub), PULL_DELAY_MS);
      } else if (frame.type === "error" && frame.code === "replay_limit") {
        live?.send({ action: "resume", stream: frame.stream, after: sub.position });
      }
      return true;
    },
  };
}
