// The posting forms: side tabs, price tiers, point/box inputs, and the advanced box whose
// constraint is checked as you type (debounced) by the market's check endpoint, with the
// error's position highlighted in the text. Without JavaScript the forms still post, and the
// server shows the same errors.

import { setupAward } from "intersect/award";

const CHECK_DELAY_MS = 300;

function csrfToken() {
  return document.querySelector('meta[name="csrf-token"]')?.content || "";
}

// -- side tabs ------------------------------------------------------------------------

function setupTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"][data-tab]')];
  if (!tabs.length) return;
  const select = (side, focus = false) => {
    for (const tab of tabs) {
      const on = tab.dataset.tab === side;
      tab.setAttribute("aria-selected", String(on));
      tab.tabIndex = on ? 0 : -1;
      document.getElementById(tab.getAttribute("aria-controls")).hidden = !on;
      if (on && focus) tab.focus();
    }
  };
  const current = tabs.find((t) => t.getAttribute("aria-selected") === "true") || tabs[0];
  select(current.dataset.tab);
  for (const panel of document.querySelectorAll("[role=tabpanel][data-inactive]")) {
    panel.removeAttribute("data-inactive");
  }
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => select(tab.dataset.tab));
    tab.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (step) {
        event.preventDefault();
        select(tabs[(i + step + tabs.length) % tabs.length].dataset.tab, true);
      }
    });
  });
  for (const link of document.querySelectorAll("[data-side-link]")) {
    link.addEventListener("click", () => {
      select(link.dataset.sideLink);
      const first = document.querySelector(
        `#panel-${link.dataset.sideLink} input:not([type=hidden]), #panel-${link.dataset.sideLink} select`,
      );
      setTimeout(() => first?.focus(), 0);
    });
  }
}

// -- point and box inputs: show the coordinates the chosen relation needs ---------------

function setupShapes(form) {
  for (const set of form.querySelectorAll('fieldset[data-kind="point"], fieldset[data-kind="box"]')) {
    const mode = set.querySelector("select");
    const update = () => {
      for (const field of set.querySelectorAll(".field[data-input]")) {
        const part = field.dataset.input.split("__").pop();
        if (part === "mode") continue;
        let show = mode.value !== "";
        if (set.dataset.kind === "point") {
          show = mode.value === "at" ? ["x", "y"].includes(part) : mode.value === "within" && part !== "x" && part !== "y";
        }
        field.hidden = !show;
      }
    };
    mode.addEventListener("change", update);
    update();
  }
}

// -- price tiers ------------------------------------------------------------------------

function setupTiers(form) {
  const list = form.querySelector("[data-tier-list]");
  if (!list) return;
  const count = form.querySelector("[data-tier-count]");
  const renumber = () => {
    const rows = [...list.querySelectorAll("[data-tier]")];
    rows.forEach((row, i) => {
      row.dataset.tier = String(i);
      row.setAttribute("aria-label", `Tier ${i + 1}`);
      row.querySelector(".tier-name").textContent = `Tier ${i + 1}`;
      for (const el of row.querySelectorAll("[name], [id], [for], [aria-describedby]")) {
        for (const attr of ["name", "id", "for", "aria-describedby"]) {
          const value = el.getAttribute(attr);
          if (value) el.setAttribute(attr, value.replace(/tier-\d+-/g, `tier-${i}-`));
        }
      }
      for (const sr of row.querySelectorAll(".sr-only")) {
        sr.textContent = sr.textContent.replace(/^Tier \d+/, `Tier ${i + 1}`);
      }
      for (const field of row.querySelectorAll("[data-input]")) {
        field.dataset.input = field.dataset.input.replace(/tier-\d+-/, `tier-${i}-`);
      }
      const remove = row.querySelector("[data-remove-tier]");
      remove.hidden = rows.length < 2;
      remove.setAttribute("aria-label", `Remove tier ${i + 1}`);
    });
    count.value = String(rows.length);
  };
  form.querySelector("[data-add-tier]")?.addEventListener("click", (event) => {
    event.preventDefault();
    const rows = list.querySelectorAll("[data-tier]");
    const row = rows[rows.length - 1].cloneNode(true);
    for (const input of row.querySelectorAll("input")) {
      input.value = "";
      input.removeAttribute("aria-invalid");
    }
    for (const error of row.querySelectorAll(".field-error")) error.remove();
    list.append(row);
    renumber();
    row.querySelector("input")?.focus();
  });
  list.addEventListener("click", (event) => {
    const button = event.target.closest("[data-remove-tier]");
    if (!button) return;
    const rows = list.querySelectorAll("[data-tier]");
    if (rows.length < 2) return;
    const row = button.closest("[data-tier]");
    const next = row.nextElementSibling || row.previousElementSibling;
    row.remove();
    renumber();
    next?.querySelector("input")?.focus();
    form.dispatchEvent(new Event("change", { bubbles: true }));
  });
  renumber();
}

// -- the advanced box ---------------------------------------------------------------------

export function escapeHtml(text) {
  return text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
}

export function lineColumn(text, position) {
  const before = text.slice(0, position);
  const line = before.split("\n").length;
  return { line, column: position - (before.lastIndexOf("\n") + 1) + 1 };
}

// The text with the word (or character) at `position` marked; a marked space past the end.
// frontend/templatetags/intersect.py (mark_at) marks the same way.
function marked(text, position) {
  if (position == null || position < 0) return escapeHtml(text);
  const at = Math.min(position, text.length);
  const word = /^[A-Za-z0-9_.]+/.exec(text.slice(at));
  const end = word ? at + word[0].length : at + (text.charAt(at) && text.charAt(at) !== "\n" ? 1 : 0);
  const inside = text.slice(at, end) || " ";
  return escapeHtml(text.slice(0, at)) + `<mark class="err">${escapeHtml(inside)}</mark>` + escapeHtml(text.slice(end));
}

// A text box checked as you type, debounced: `request(text, signal)` posts it and gives the
// fetch's Response; a 2xx body is shown with `okHtml(body)`, an error's message with its
// line and column (1-based) and its position marked in the `mirror` behind the text (the
// advanced box here, the subscription editor of alerts.js). Returns { check, paint } for a
// caller that puts text in the box itself.
export function checkAsYouType({ area, mirror, status, request, okHtml, invalidText, unknownText }) {
  let timer = null;
  let controller = null;
  let serial = 0;

  const paint = (position) => {
    // A trailing newline keeps the mirror as tall as the textarea.
    mirror.innerHTML = marked(area.value, position) + "\n";
    mirror.scrollTop = area.scrollTop;
  };
  const show = (state, html) => {
    status.dataset.state = state;
    status.innerHTML = html;
  };

  const check = async () => {
    const text = area.value;
    if (!text.trim()) {
      area.removeAttribute("aria-invalid");
      paint(null);
      show("empty", "");
      return;
    }
    controller?.abort();
    controller = new AbortController();
    const mine = ++serial;
    show("checking", '<p class="muted">Checking…</p>');
    let response;
    let body;
    try {
      response = await request(text, controller.signal);
      body = await response.json();
    } catch (error) {
      if (error.name !== "AbortError" && mine === serial) {
        show("unknown", `<p class="muted">${escapeHtml(unknownText)}</p>`);
      }
      return;
    }
    if (mine !== serial || text !== area.value) return; // a newer check is on its way
    if (response.ok) {
      area.removeAttribute("aria-invalid");
      paint(null);
      show("ok", okHtml(body));
      return;
    }
    const error = body.error || { message: invalidText };
    area.setAttribute("aria-invalid", "true");
    paint(error.position);
    let where = "";
    if (typeof error.position === "number") {
      const { line, column } = lineColumn(text, error.position);
      where = ` <span class="where">(line ${line}, column ${column})</span>`;
    }
    show(
      "error",
      `<p class="check-bad" data-error-code="${escapeHtml(String(error.code || ""))}"` +
        (typeof error.position === "number" ? ` data-error-position="${error.position}"` : "") +
        `>${escapeHtml(error.message)}${where}</p>`,
    );
  };

  area.addEventListener("input", () => {
    paint(null);
    clearTimeout(timer);
    timer = setTimeout(check, CHECK_DELAY_MS);
  });
  area.addEventListener("scroll", () => {
    mirror.scrollTop = area.scrollTop;
  });
  return { check, paint };
}

// A JSON POST with the page's CSRF token, as the check endpoints take it.
export function postJson(url, payload, signal) {
  return fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
    body: JSON.stringify(payload),
    signal,
  });
}

function setupAdvanced(form) {
  const area = form.querySelector("[data-constraint]");
  if (!area) return;
  const status = form.querySelector("[data-check-status]");
  const url = form.dataset.checkUrl;
  const side = form.dataset.side;
  const box = checkAsYouType({
    area,
    mirror: form.querySelector("[data-mirror]"),
    status,
    request: (text, signal) => postJson(url, { side, constraint: text }, signal),
    okHtml: (body) => {
      const tiers = (body.tiers || []).map((t) => `<li>${escapeHtml(t)}</li>`).join("");
      return (
        `<p class="check-ok"><span aria-hidden="true">✓</span> Valid. It posts as:</p>` +
        `<pre class="constraint-preview">${escapeHtml(body.constraint)}</pre>` +
        (tiers ? `<ol class="tiers small">${tiers}</ol>` : "")
      );
    },
    invalidText: "This constraint is not valid.",
    unknownText: "Could not check right now; the server checks again when you post.",
  });

  const usesText = () => form.classList.toggle("uses-text", area.value.trim() !== "");
  usesText();
  area.addEventListener("input", usesText);
  // Copy what the form posts into the box, to go on from there.
  form.addEventListener("click", (event) => {
    if (!event.target.closest("[data-copy-to-advanced]")) return;
    const text = form.querySelector("[data-preview-text]")?.textContent || "";
    area.value = text;
    usesText();
    area.closest("details").open = true;
    area.focus();
    box.paint(null);
    box.check();
  });
  if (area.value.trim()) {
    // A page shown again after a refused post: keep the server's marks, then check live.
    if (!status.innerHTML.trim()) box.check();
  }
}

// The form's preview follows what the form (not the advanced box) posts. htmx would filter
// its trigger with an expression (input[!target.closest('.advanced')]), which it evaluates
// with eval: the CSP forbids that (htmx:evalDisallowedError), so the filtering is done here
// and the preview listens for these two events instead.
function setupPreview(form) {
  const preview = form.querySelector("[data-preview]");
  if (!preview) return;
  for (const [kind, name] of [["input", "form-input"], ["change", "form-change"]]) {
    form.addEventListener(kind, (event) => {
      if (!event.target.closest(".advanced")) preview.dispatchEvent(new Event(name));
    });
  }
}

export function setupPosting() {
  setupTabs();
  for (const form of document.querySelectorAll("form.posting")) {
    setupShapes(form);
    setupTiers(form);
    setupAdvanced(form);
    setupPreview(form);
    setupAward(form);
  }
}
