// What a bid could win, under the bid form before it is sent: the form is posted (as it
// would be placed) to the market's award endpoint as the buyer types, and its sentence,
// "It could win at most 600,000 pencils at 0.92 EUR: 552,000.00 EUR in all. ...", is shown
// with the largest lot and total in data attributes. The server computes it, so the page
// and placing the bid agree (exchange/selectors/limits.py). Without JavaScript the hint
// stays and placing the bid answers the same.

const DELAY_MS = 300;

export function setupAward(form) {
  const out = form.querySelector("[data-award]");
  if (!out) return;
  let timer = null;
  let controller = null;
  const refresh = async () => {
    controller?.abort();
    controller = new AbortController();
    let body;
    try {
      const response = await fetch(out.dataset.awardUrl, {
        method: "POST",
        credentials: "same-origin",
        body: new FormData(form),
        signal: controller.signal,
      });
      if (!response.ok) return; // throttled or gone: keep what is shown
      body = await response.json();
    } catch (error) {
      if (error.name !== "AbortError") out.dataset.state = "unknown";
      return;
    }
    out.textContent = body.text;
    out.dataset.state = body.state;
    out.dataset.largestLot = body.largest_lot ?? "";
    out.dataset.largestAward = body.largest_award ?? "";
    out.classList.toggle("check-bad", body.state === "over" || body.state === "invalid");
  };
  const soon = (event) => {
    if (event.target.closest("[data-award]")) return;
    clearTimeout(timer);
    timer = setTimeout(refresh, DELAY_MS);
  };
  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
  // A form shown filled (a refused post, "Bid on this tier") shows its award at once.
  if (form.querySelector('input[name="price"]')?.value) refresh();
}
