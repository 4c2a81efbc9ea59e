// Charts with TradingView Lightweight Charts (served from /static/vendor/, no CDN).
//
// An element [data-chart="candles"|"line"|"lines"][data-source="<json script id>"] draws the
// data of that <script type="application/json">: candles and volume of a market's trades
// (or of its days, with the VWAP), an offer's best bid over time, or a market's daily
// figures as lines. When a live region swaps in fresh data, refresh() redraws. Buttons
// [data-candle-width="<key of data.widths>"][aria-controls="<chart id>"] switch a candle
// chart between widths in place ("" is the automatic one).

import {
  CandlestickSeries,
  ColorType,
  createChart,
  HistogramSeries,
  LineSeries,
  LineType,
} from "lightweight-charts";

const UP = "#15803d";
const DOWN = "#b91c1c";
const mounted = new Map(); // element -> { chart, series }

function read(id) {
  const script = document.getElementById(id);
  if (!script) return null;
  try {
    return JSON.parse(script.textContent);
  } catch {
    return null;
  }
}

export function priceFormat(data) {
  const precision = Number.isInteger(data?.precision) ? data.precision : 2;
  return { type: "price", precision, minMove: 10 ** -precision };
}

export function baseChart(el, secondsVisible) {
  return createChart(el, {
    autoSize: true,
    layout: {
      // The footer credits TradingView; the chart's own logo would inject a <style> element,
      // which the Content-Security-Policy blocks.
      attributionLogo: false,
      background: { type: ColorType.Solid, color: "#ffffff" },
      textColor: "#475569",
      fontFamily: getComputedStyle(document.body).fontFamily,
      fontSize: 12,
    },
    grid: { vertLines: { color: "#eef2f7" }, horzLines: { color: "#eef2f7" } },
    rightPriceScale: { borderColor: "#e2e8f0" },
    timeScale: { borderColor: "#e2e8f0", timeVisible: true, secondsVisible },
    crosshair: { mode: 0 },
    handleScroll: { mouseWheel: false, pressedMouseMove: true },
    handleScale: { mouseWheel: false, pinch: true },
  });
}

function candles(el, data) {
  const chart = baseChart(el, (data.interval || 60) < 60);
  const price = chart.addSeries(CandlestickSeries, {
    upColor: UP,
    downColor: DOWN,
    borderUpColor: UP,
    borderDownColor: DOWN,
    wickUpColor: UP,
    wickDownColor: DOWN,
    priceFormat: priceFormat(data),
  });
  price.priceScale().applyOptions({ scaleMargins: { top: 0.1, bottom: 0.22 } });
  const volume = chart.addSeries(HistogramSeries, {
    priceScaleId: "volume",
    priceFormat: { type: "volume" },
    lastValueVisible: false,
    priceLineVisible: false,
  });
  volume.priceScale().applyOptions({ scaleMargins: { top: 0.84, bottom: 0 } });
  let vwap = null; // daily candles carry the day's VWAP: a line over them
  const entry = { chart, kind: "candles", set: null };
  entry.set = (d) => {
    const rows = d.candles || [];
    const interval = d.interval || 60;
    chart.applyOptions({ timeScale: { secondsVisible: interval < 60, timeVisible: interval < 86400 } });
    price.setData(rows.map(({ time, open, high, low, close }) => ({ time, open, high, low, close })));
    if (!vwap && rows.some((c) => c.vwap != null)) {
      vwap = chart.addSeries(LineSeries, {
        color: d.vwap_color || "#d97706",
        lineWidth: 2,
        pointMarkersVisible: true,
        lastValueVisible: false,
        priceLineVisible: false,
        priceFormat: priceFormat(d),
      });
    }
    vwap?.setData(rows.filter((c) => c.vwap != null).map((c) => ({ time: c.time, value: c.vwap })));
    volume.setData(
      rows.map((c) => ({
        time: c.time,
        value: c.volume,
        color: c.close >= c.open ? "rgba(21,128,61,.35)" : "rgba(185,28,28,.35)",
      })),
    );
    chart.timeScale().fitContent();
  };
  entry.set(data);
  return entry;
}

function line(el, data) {
  const chart = baseChart(el, true);
  const series = chart.addSeries(LineSeries, {
    color: "#2563eb",
    lineWidth: 2,
    lineType: LineType.WithSteps,
    pointMarkersVisible: true,
    priceFormat: priceFormat(data),
  });
  const entry = { chart, kind: "line", set: null };
  entry.set = (d) => {
    const points = (d.points || []).map((p) =>
      p.value == null ? { time: p.time } : { time: p.time, value: p.value },
    );
    // The best value holds until it changes: carry the last one on to now.
    const last = points[points.length - 1];
    const now = Math.floor(Date.now() / 1000);
    if (last && "value" in last && now > last.time) points.push({ time: now, value: last.value });
    series.setData(points);
    chart.timeScale().fitContent();
  };
  entry.set(data);
  return entry;
}

// Several lines on up to two price scales ("left", "right"), each with its own unit:
// { series: [{ label, color, scale, unit, precision, points: [{ time, value }] }] }.
function lines(el, data) {
  const chart = baseChart(el, false);
  const all = data.series || [];
  chart.applyOptions({
    leftPriceScale: { visible: all.some((s) => s.scale === "left"), borderColor: "#e2e8f0" },
  });
  const series = all.map((s) =>
    chart.addSeries(LineSeries, {
      color: s.color,
      lineWidth: 2,
      pointMarkersVisible: true,
      priceScaleId: s.scale === "left" ? "left" : "right",
      lastValueVisible: false,
      priceLineVisible: false,
      priceFormat: {
        type: "custom",
        minMove: 10 ** -(s.precision ?? 0),
        formatter: (v) => `${v.toFixed(s.precision ?? 0)}${s.unit || ""}`,
      },
    }),
  );
  const entry = { chart, kind: "lines", set: null };
  entry.set = (d) => {
    (d.series || []).forEach((s, i) => series[i]?.setData(s.points || []));
    chart.timeScale().fitContent();
  };
  entry.set(data);
  return entry;
}

const KINDS = { candles, line, lines };

function points(kind, data) {
  if (kind === "candles") return data?.candles?.length || 0;
  if (kind === "lines") return (data?.series || []).reduce((n, s) => n + (s.points?.length || 0), 0);
  return data?.points?.length || 0;
}

// What a candle chart shows: its data at the automatic width, or at the width its buttons
// chose (el.dataset.width, a key of data.widths), which survives live refreshes.
function shown(el, data) {
  const width = el.dataset.width && data?.widths?.[el.dataset.width];
  return width ? { ...data, ...width } : data;
}

function summarise(el, data) {
  const summary = el.id && document.querySelector(`[data-candle-summary="${el.id}"]`);
  const n = data?.candles?.length || 0;
  // A width with more candles than the page embeds shows its latest ones and says so.
  const latest = data?.dropped ? "the latest " : "";
  if (summary && data?.label) summary.textContent = `${latest}${n} candle${n === 1 ? "" : "s"} of ${data.label}`;
}

function chooseWidth(button) {
  const el = document.getElementById(button.getAttribute("aria-controls"));
  if (!el) return;
  el.dataset.width = button.dataset.candleWidth;
  for (const other of document.querySelectorAll(`[data-candle-width][aria-controls="${el.id}"]`)) {
    other.setAttribute("aria-pressed", String(other === button));
  }
  draw(el);
}

let widthsWired = false;

function wireWidths() {
  if (widthsWired) return;
  widthsWired = true;
  document.addEventListener("click", (event) => {
    const button = event.target.closest?.("[data-candle-width][aria-controls]");
    if (button) chooseWidth(button);
  });
}

function draw(el) {
  const kind = el.dataset.chart;
  const data = kind === "candles" ? shown(el, read(el.dataset.source)) : read(el.dataset.source);
  if (kind === "candles") summarise(el, data);
  const empty = el.querySelector(".chart-empty");
  const count = KINDS[kind] ? points(kind, data) : 0;
  if (!count) {
    if (empty) empty.hidden = false;
    return;
  }
  if (empty) empty.hidden = true;
  const entry = mounted.get(el);
  if (entry) {
    entry.set(data);
  } else {
    mounted.set(el, KINDS[kind](el, data));
  }
  el.dataset.drawn = String(count);
}

export function mountCharts(root = document) {
  wireWidths();
  for (const el of root.querySelectorAll("[data-chart][data-source]")) draw(el);
}

export const refreshCharts = mountCharts;
