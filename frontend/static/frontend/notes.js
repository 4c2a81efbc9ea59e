// Personal notifications as one sentence each; frontend/notifications.py says the same for
// the ones a page renders (and why each is true for its recipient). Keep the two in step:
// tests/browser/test_notes.py runs both on the same cases.

const bids = (n) => (n === 1 ? "1 matching bid" : `${n} matching bids`);
const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);

// A number for people: exchange/numbers.py's grouped_text, rule for rule and with the same
// regular expressions (tests/frontend/test_numbers.py runs one table through both). The
// server sends plain text ("8000", "9440.00") or a JSON integer; this separates thousands
// and keeps the places; null and "" read "—"; other text is shown as it is.
const PLAIN_NUMBER = /^(-?\d+)(\.\d+)?$/;
const THOUSANDS = /\B(?=(\d{3})+(?!\d))/g;
export function groupedText(value) {
  if (value == null || value === "") return "—";
  const text = String(value);
  const plain = PLAIN_NUMBER.exec(text);
  if (!plain) return text;
  return plain[1].replace(THOUSANDS, ",") + (plain[2] || "");
}
const money = (value, data) => (data.unit ? `${groupedText(value)} ${data.unit}` : groupedText(value));

function terms(data) {
  const price = money(data.price, data);
  if (!data.quantity) return `at ${price}`;
  const amount = data.quantity_unit ? `${groupedText(data.quantity)} ${data.quantity_unit}` : groupedText(data.quantity);
  const total = data.total ? `, ${money(data.total, data)} in all` : "";
  return `${amount} at ${price}${total}`;
}

export function noteText(kind, data) {
  const offer = `offer #${data.offer}`;
  const bid = `bid #${data.bid}`;
  const pricing = data.pricing || "first";
  const best = data.best_value;
  switch (kind) {
    case "best_offer": {
      if ((data.state || "open") !== "open") return [`${cap(offer)} is ${data.state}.`, "info"];
      if (best == null) return [`No bid matches ${offer} any more.`, "info"];
      const count = bids(data.matching_bids);
      if (pricing === "fixed") return [`A bid is first in line for ${offer} at ${money(best, data)} (${count}).`, "good"];
      const tail = pricing === "second" ? "; the winner pays the second-best value plus a tick, at most that" : "";
      return [`Best bid on ${offer} is now ${money(best, data)} (${count})${tail}.`, "good"];
    }
    case "best_bid":
      if (pricing === "fixed") return [`${cap(bid)} is first in line for ${offer} at ${money(best, data)}.`, "good"];
      if (pricing === "second") {
        return [
          `${cap(bid)} is now the best bid on ${offer}; if it wins it pays the second-best value plus a tick, at most ${money(best, data)}.`,
          "good",
        ];
      }
      return [`${cap(bid)} is now the best bid on ${offer} at ${money(best, data)}.`, "good"];
    case "outbid": {
      const tail = best ? `: the best bid is now ${money(best, data)}` : "";
      return [`${cap(bid)} was outbid on ${offer}${tail}.`, "bad"];
    }
    case "not_best":
      if (data.status === "unmatched") return [`${cap(bid)} no longer matches ${offer}.`, "info"];
      return [`${cap(bid)} is no longer first in line for ${offer}: another bid is ahead at ${money(best, data)}.`, "bad"];
    case "offer_ended": {
      const ended = pricing === "fixed" ? "Sale ended" : "Auction ended";
      const price = money(data.price, data);
      if (data.status === "lost") {
        if (data.own) return [`${ended}: ${offer} went to your bid #${data.winning_bid} at ${price}; ${bid} did not win.`, "info"];
        return [`${ended}, you did not win: ${offer} went to another bid at ${price} (${bid}).`, "bad"];
      }
      if (data.status === "over_limit") {
        const total = data.total ? money(data.total, data) : "an unbounded amount";
        const tail = data.sold ? `; it went to another bid at ${price}` : "; it closed unsold";
        return [
          `${ended}, you did not win ${offer}: ${bid} would have cost ${total}, more than the ${money(data.remaining, data)} left of your spending limit${tail}.`,
          "bad",
        ];
      }
      if (data.status === "closed") {
        if (data.sold === false) return [`${cap(offer)} closed unsold.`, "info"];
        return [`${cap(offer)} closed and another bid won it.`, "info"];
      }
      const who = { withdrawn: " by its seller", cancelled: " by staff" }[data.status] || "";
      return [`${cap(offer)} was ${data.status}${who}: ${bid} no longer matches it.`, "info"];
    }
    case "set_aside": {
      // The engine wrote the sentence; a set-aside bid has no offer to name.
      const order = data.offer ? `offer #${data.offer}` : `bid #${data.bid}`;
      return [data.message || `Your ${order} is left out of matching.`, "bad"];
    }
    case "trade":
      if (data.buyer) return [`Sold: ${offer} to ${data.buyer}, ${terms(data)}.`, "good"];
      if (pricing === "fixed") return [`Bought: ${bid} filled by ${offer}, ${terms(data)}.`, "good"];
      return [`Won: ${bid} won the auction of ${offer}, ${terms(data)}.`, "good"];
    case "offer":
      if (data.state === "closed" && !data.sold) return [`${cap(offer)} closed unsold.`, "info"];
      if (data.state === "cancelled") return [`${cap(offer)} was cancelled by staff.`, "bad"];
      return [`${cap(offer)} is now ${data.state}.`, "info"];
    default:
      return [`${String(kind).replace(/_/g, " ")} on ${offer}.`, "info"];
  }
}
