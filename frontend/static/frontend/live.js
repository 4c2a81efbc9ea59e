// The page's live connection: one WebSocket to /ws/ (SPEC 6.3).
//
// It subscribes to the page's public streams (market:<subject>, offer:<id>) and, for a
// logged-in user, resumes the personal "me" stream after the last notification the page
// knew of when it was rendered (read before the page's data), so no notification is missed
// between rendering and connecting, or while the connection is down. Public frames are not
// replayed, so once every public subscription is confirmed, onSynced() fetches the page's
// live regions again: whatever changed before that is in the fetched copy, whatever
// changes after it arrives as a frame. A dropped connection is retried with exponential
// backoff and jitter, and synced the same way.

const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 15000;

export class Live {
  constructor({ streams = [], me = false, after = 0, resumes = null, onFrame, onSynced, onStatus }) {
    this.streams = streams;
    this.resumes = resumes; // () => [{ stream, after }]: streams resumed on each (re)connect
    this.me = me;
    this.lastSeq = after;
    this.onFrame = onFrame;
    this.onSynced = onSynced;
    this.awaiting = null;
    this.onStatus = onStatus;
    this.attempt = 0;
    this.opened = false;
    this.socket = null;
    this.timer = null;
  }

  get url() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    return `${scheme}//${location.host}/ws/`;
  }

  start() {
    if (!this.streams.length && !this.me && !this.resumes) return;
    this.connect();
    window.addEventListener("online", () => this.retryNow());
  }

  connect() {
    clearTimeout(this.timer);
    this.onStatus?.(this.opened ? "reconnecting" : "connecting");
    let socket;
    try {
      socket = new WebSocket(this.url);
    } catch {
      this.schedule();
      return;
    }
    this.socket = socket;
    socket.addEventListener("open", () => {
      this.opened = true;
      this.attempt = 0;
      this.awaiting = new Set(this.streams);
      for (const stream of this.streams) this.send({ action: "subscribe", stream });
      if (this.me) this.send({ action: "resume", stream: "me", after: this.lastSeq });
      for (const { stream, after } of this.resumes?.() || []) this.send({ action: "resume", stream, after });
      this.onStatus?.("open");
      if (!this.awaiting.size) this.onSynced?.();
    });
    socket.addEventListener("message", (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      if (frame.type === "subscribed" && this.awaiting?.delete(frame.stream) && !this.awaiting.size) {
        this.onSynced?.();
      }
      if (frame.stream === "me" && frame.type === "notification") {
        if (typeof frame.seq === "number" && frame.seq <= this.lastSeq) return; // seen already
        this.lastSeq = frame.seq;
      }
      this.onFrame?.(frame);
    });
    socket.addEventListener("close", () => {
      if (this.socket !== socket) return;
      this.socket = null;
      this.schedule();
    });
  }

  schedule() {
    const base = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** this.attempt);
    const delay = Math.round(base * (0.75 + Math.random() * 0.5));
    this.attempt += 1;
    this.onStatus?.("reconnecting", delay);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  retryNow() {
    if (this.socket) return;
    this.attempt = 0;
    this.connect();
  }

  send(message) {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }
}

// Live regions: elements with an id and data-refresh-on="<event> ..." are fetched again
// (the whole page, parsed, and only those elements swapped in) when one of their events
// arrives. Bursts are coalesced; a frame that arrives during a fetch triggers one more
// fetch after it, so a region never ends up older than the last frame.
export class Regions {
  constructor({ delay = 250, onSwap } = {}) {
    this.delay = delay;
    this.onSwap = onSwap;
    this.pending = new Set();
    this.timer = null;
    this.inFlight = false;
    this.again = false;
  }

  request(eventNames) {
    for (const el of document.querySelectorAll("[data-refresh-on][id]")) {
      const wanted = el.dataset.refreshOn.split(/\s+/);
      if (eventNames === "*" || eventNames.some((name) => wanted.includes(name))) {
        this.pending.add(el.id);
      }
    }
    if (!this.pending.size) return;
    if (this.inFlight) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), this.delay);
  }

  async flush() {
    if (this.inFlight) return; // the running fetch calls flush again when it ends
    const ids = [...this.pending];
    this.pending.clear();
    if (!ids.length) return;
    this.inFlight = true;
    try {
      const response = await fetch(location.href, {
        credentials: "same-origin",
        headers: { Accept: "text/html" },
        cache: "no-store",
      });
      if (response.ok) {
        const doc = new DOMParser().parseFromString(await response.text(), "text/html");
        const swapped = [];
        for (const id of ids) {
          const current = document.getElementById(id);
          const fresh = doc.getElementById(id);
          if (current && fresh) {
            const focusedInside = current.contains(document.activeElement);
            current.replaceWith(fresh);
            if (window.htmx) window.htmx.process(fresh);
            if (focusedInside) fresh.focus?.({ preventScroll: true });
            swapped.push(fresh);
          }
        }
        this.onSwap?.(swapped);
      } else {
        for (const id of ids) this.pending.add(id); // kept for the next request
      }
    } catch {
      for (const id of ids) this.pending.add(id); // offline: the reconnect asks again
    } finally {
      this.inFlight = false;
      if (this.again) {
        this.again = false;
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.flush(), this.delay);
      }
    }
  }
}
