// Personal notifications as one sentence each; frontend/notifications.py says the same for
// the ones a page renders. Keep the two in step.

const bids = (n) => (n === 1 ? "1 matching bid" : `${n} matching bids`);
const cap = (s) => s.charAt(0).toUpperCase() + s.slice(1);
const grouped = (q) => {
  const [whole, fraction] = String(q).split(".");
  const text = /^-?\d+$/.test(whole) ? whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",") : whole;
  return fraction ? `${text}.${fraction}` : text;
};

export function noteText(kind, data) {
  const offer = `offer #${data.offer}`;
  const bid = `Bid #${data.bid}`;
  switch (kind) {
    case "best_offer":
      if (data.best_value == null) return [`No bid matches ${offer} any more.`, "info"];
      return [`Best bid on ${offer} is now ${data.best_value} (${bids(data.matching_bids)}).`, "good"];
    case "best_bid":
      return [`${bid} is now the best bid on ${offer} at ${data.best_value}.`, "good"];
    case "outbid": {
      const tail = data.best_value ? `: the best bid is now ${data.best_value}` : "";
      return [`${bid} was outbid on ${offer}${tail}.`, "bad"];
    }
    case "offer_ended":
      if (data.status === "closed") return [`${cap(offer)} closed to another bid.`, "info"];
      return [`${cap(offer)} is ${data.status}: ${bid} no longer matches it.`, "info"];
    case "set_aside": {
      // The engine wrote the sentence; a set-aside bid has no offer to name.
      const order = data.offer ? `offer #${data.offer}` : `bid #${data.bid}`;
      return [data.message || `Your ${order} is left out of matching.`, "bad"];
    }
    case "trade": {
      const terms = (data.quantity ? `${grouped(data.quantity)} at ` : "at ") + data.price;
      if (data.buyer) return [`Sold: ${offer} to ${data.buyer}, ${terms}.`, "good"];
      return [`Bought: ${bid} filled by ${offer}, ${terms}.`, "good"];
    }
    case "offer":
      if (data.state === "closed" && !data.sold) return [`${cap(offer)} closed unsold.`, "info"];
      return [`${cap(offer)} is now ${data.state}.`, "info"];
    default:
      return [`${String(kind).replace(/_/g, " ")} on ${offer}.`, "info"];
  }
}
