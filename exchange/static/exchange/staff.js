// The staff dashboard refreshes itself: every few seconds (while the tab is visible) it reads
// the page again and puts the new #dashboard in place of the old, so a stalled cycle, a
// growing backlog or a suspended subscription shows without a reload. A failed read leaves
// the page as it was and says so; the next one tries again.

const EVERY_MS = 5000;

async function refresh(status) {
  if (document.hidden) return;
  try {
    const response = await fetch(location.href, { headers: { Accept: "text/html" }, credentials: "same-origin" });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html").getElementById("dashboard");
    const current = document.getElementById("dashboard");
    if (!fresh || !current) throw new Error("no dashboard in the answer");
    // Keep a form a staff member is using (a Close button just focused) as it is.
    if (current.contains(document.activeElement) && document.activeElement.closest("form")) return;
    current.replaceWith(fresh);
    status.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    status.dataset.state = "ok";
  } catch (error) {
    status.textContent = `Not updated (${error.message}); trying again`;
    status.dataset.state = "failed";
  }
}

const status = document.getElementById("dashboard-status");
if (status) {
  setInterval(() => refresh(status), EVERY_MS);
  document.addEventListener("visibilitychange", () => refresh(status));
}
