// The dashboard: sign-in, its views, and the states of a failed call.

import { ApiError, call, key, onLimits, send, walk } from "./api.js";
import * as charts from "./charts.js";
import { download, toCsv } from "./csv.js";
import { addDays, dayOf, daysBetween, fromUnits, toUnits, unitsToNumber } from "./numbers.js";

const $ = (selector) => document.querySelector(selector);
const VIEWS = [
  "usage", "packages", "downloads", "sales", "buyers", "webhooks", "whitelist", "money",
];
const WHITELIST_PAGE = 25;
const BUYERS_PAGE = 25;

const state = {
  today: null, // the application's today ("YYYY-MM-DD", its time zone), from the API
  view: null,
  packages: null,
  sort: { key: "package", ascending: true },
  sales: null,
  downloads: null, // the package whose downloads are shown
  buyers: { package: null, cursors: [""], index: 0 },
  webhook: { endpoint: null, cursor: null },
  payouts: [], // the Money view's, for its CSV
  whitelist: { package: null, page: 1 },
  retry: null,
  sequence: 0, // answers to a superseded request are dropped
};

// Elements ------------------------------------------------------------------------------------

function cell(row, text, className = "") {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "–" : String(text);
  if (className) td.className = className;
  row.append(td);
  return td;
}

/** A date-time cell to the minute (the day and time of the application's zone); the full
 * ISO 8601 value, seconds and offset, in its title. */
function moment(td, iso) {
  td.textContent = iso.slice(0, 16).replace("T", " ");
  td.title = iso;
}

function fill(tbody, rows, render) {
  const lines = rows.map((item) => {
    const tr = document.createElement("tr");
    render(tr, item);
    return tr;
  });
  tbody.replaceChildren(...lines);
}

function busy(view, value) {
  $(`#view-${view}`).setAttribute("aria-busy", String(value));
}

// Notices and failures ------------------------------------------------------------------------

function notice(kind, message, retry = null) {
  const box = $("#notice");
  box.className = `notice notice-${kind}`;
  const text = document.createElement("p");
  text.textContent = message;
  box.replaceChildren(text);
  state.retry = retry;
  if (retry) {
    const again = document.createElement("button");
    again.type = "button";
    again.textContent = "Retry";
    again.addEventListener("click", () => {
      clearNotice();
      retry();
    });
    box.append(again);
  }
  box.dataset.kind = kind;
  box.hidden = false;
}

function clearNotice() {
  const box = $("#notice");
  box.hidden = true;
  box.replaceChildren();
  delete box.dataset.kind;
}

/** Shows why ``error`` happened; a refused key signs out. ``retry`` repeats the failed action. */
function failed(error, retry) {
  if (!(error instanceof ApiError)) throw error;
  if (error.kind === "key") {
    signOut();
    notice("key", `${error.message} Check the key and sign in again.`);
  } else if (error.kind === "rate") {
    const wait = error.retryAfter ? ` Retry in ${error.retryAfter} s.` : "";
    notice("rate", `Too many requests: the rate limit is spent.${wait}`, retry);
  } else if (error.kind === "down") {
    notice("down", error.message, retry);
  } else {
    notice("request", `The request failed: ${error.message}`, retry);
  }
}

/** Runs ``action`` for ``view``; its failure is shown, and a later run supersedes it. */
async function run(view, action) {
  const sequence = ++state.sequence;
  const current = () => sequence === state.sequence;
  clearNotice();
  busy(view, true);
  try {
    await action(current);
  } catch (error) {
    if (current()) failed(error, () => run(view, action));
  } finally {
    busy(view, false);
  }
}

/** A window's length in words: 3600 is "hour", 120 is "2 minutes". */
function windowWords(seconds) {
  for (const [unit, length] of [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]]) {
    if (seconds % length === 0) {
      const count = seconds / length;
      return count === 1 ? unit : `${count} ${unit}s`;
    }
  }
  return `${seconds} seconds`;
}

onLimits(({ limit, remaining, reset, window }) => {
  $("#rate-limit").textContent = window
    ? `${limit} requests per ${windowWords(window)}`
    : `${limit} requests per window`;
  $("#rate-remaining").textContent = `${remaining} (window resets in ${reset} s)`;
});

// Wide tables ---------------------------------------------------------------------------------

// A table wider than its box scrolls sideways inside it. A scroll bar may not show (a phone,
// overlay scroll bars), so a line above the table says there is more, while there is.
for (const box of document.querySelectorAll(".scroll")) {
  const hint = document.createElement("p");
  hint.className = "scroll-hint";
  hint.textContent = "More columns: scroll the table sideways →";
  hint.hidden = true;
  box.before(hint);
}

function markOverflow(box) {
  const over = box.scrollWidth > box.clientWidth + 1;
  box.dataset.overflow = String(over);
  box.previousElementSibling.hidden = !over;
  // Reachable from the keyboard when it scrolls, named by its table's caption.
  if (over) {
    box.tabIndex = 0;
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", box.querySelector("caption")?.textContent ?? "Table");
  } else {
    box.removeAttribute("tabindex");
    box.removeAttribute("role");
    box.removeAttribute("aria-label");
  }
}

const resized = new ResizeObserver((entries) => {
  for (const entry of entries) markOverflow(entry.target.closest(".scroll"));
});
for (const box of document.querySelectorAll(".scroll")) {
  resized.observe(box);
  resized.observe(box.querySelector("table"));
}
// A table in a closed <details> has no size to observe until it opens.
for (const details of document.querySelectorAll("details")) {
  details.addEventListener("toggle", () => details.querySelectorAll(".scroll").forEach(markOverflow));
}

// Sign-in -------------------------------------------------------------------------------------

function show(view) {
  state.view = view;
  for (const name of ["sign-in", ...VIEWS]) $(`#view-${name}`).hidden = name !== view;
  for (const button of document.querySelectorAll("#nav button")) {
    if (button.dataset.view === view) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
}

async function learnToday() {
  // One day of usage: proves the key, and dates "today" in the application's time zone.
  const days = await call("application/usage", { days: 1 });
  state.today = dayOf(days[days.length - 1].date);
}

function signedIn() {
  $("#nav").hidden = false;
  $("#sign-out").hidden = false;
  open("usage");
}

function signOut() {
  key.clear();
  Object.assign(state, { today: null, packages: null, sales: null });
  state.buyers = { package: null, cursors: [""], index: 0 };
  state.webhook = { endpoint: null, cursor: null };
  state.whitelist = { package: null, page: 1 };
  $("#whitelist-summary").textContent = "";
  $("#whitelist-changed").textContent = "";
  $("#webhook-log-box").hidden = true;
  $("#webhook-sent").textContent = "";
  state.sequence++;
  for (const canvas of document.querySelectorAll("canvas")) charts.clear(canvas);
  for (const tbody of document.querySelectorAll("tbody")) tbody.replaceChildren();
  for (const figure of ["#usage-today", "#rate-limit", "#rate-remaining", "#downloads-today", "#downloads-total"]) {
    $(figure).textContent = "–";
  }
  state.downloads = null;
  for (const field of ["#sales-start", "#sales-end"]) $(field).value = "";
  $("#buyers-summary").textContent = "";
  $("#refund-result").textContent = "";
  state.payouts = [];
  clearNotice();
  $("#nav").hidden = true;
  $("#sign-out").hidden = true;
  $("#key").value = "";
  show("sign-in");
  $("#key").focus();
}

$("#sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const value = $("#key").value.trim();
  if (!value) {
    notice("key", "Enter your application's secret key.");
    return;
  }
  key.set(value);
  $("#key").value = "";
  signedIn();
});

$("#sign-out").addEventListener("click", signOut);

function open(view) {
  show(view);
  $(`#${view}-title`).focus();
  if (view === "usage") loadUsage();
  else if (view === "packages") loadPackages();
  else if (view === "downloads") prepareDownloads();
  else if (view === "sales") prepareSales();
  else if (view === "buyers") prepareBuyers();
  else if (view === "webhooks") loadEndpoints();
  else if (view === "money") loadMoney();
  else if (view === "whitelist") prepareWhitelist();
}

for (const button of document.querySelectorAll("#nav button")) {
  button.addEventListener("click", () => open(button.dataset.view));
}
for (const name of VIEWS) $(`#${name}-title`).tabIndex = -1;

// Usage ---------------------------------------------------------------------------------------

const OPERATIONS = [
  "application/usage",
  "package/details",
  "package/buyers",
  "source/packages",
  "source/sales",
  "package/check",
  "package/downloads",
  "package/whitelist",
];
const UNSPLIT = "not split by operation";

/** Each series its own colour, the same on every load: an operation's by its place in
 * OPERATIONS, "not split by operation" always grey. */
function colourOf(name) {
  if (name === UNSPLIT) return charts.GREY;
  const at = OPERATIONS.indexOf(name);
  return charts.COLOURS[(at >= 0 ? at : OPERATIONS.length) % charts.COLOURS.length];
}

function usageRange() {
  return Number(document.querySelector("input[name=usage-range]:checked").value);
}

function loadUsage() {
  run("usage", async (current) => {
    if (!state.today) await learnToday();
    const range = usageRange();
    const start = addDays(state.today, 1 - range);
    const entries = await call("application/usage", {
      by: "operation",
      start,
      end: state.today,
    });
    if (current()) renderUsage(entries);
  });
}

function renderUsage(entries) {
  const labels = entries.map((entry) => dayOf(entry.date));
  const totals = entries.map((entry) => Number(entry.usage));
  const seen = new Set(entries.flatMap((entry) => Object.keys(entry.operations ?? {})));
  const names = [...OPERATIONS.filter((name) => seen.has(name)), ...[...seen].filter((name) => !OPERATIONS.includes(name)).sort()];
  const series = names.map((name) => entries.map((entry) => entry.operations?.[name] ?? 0));
  // Days counted before counts were kept per operation: their requests, undivided.
  const rest = totals.map((total, day) => total - series.reduce((sum, counts) => sum + counts[day], 0));
  const columns = [...names];
  if (rest.some((count) => count > 0)) {
    columns.push(UNSPLIT);
    series.push(rest.map((count) => Math.max(count, 0)));
  }
  charts.draw(
    $("#usage-chart"),
    "bar",
    labels,
    columns.map((label, index) => {
      const colour = colourOf(label);
      return { label, data: series[index], backgroundColor: colour, borderColor: colour };
    }),
    { stacked: true, yTitle: "requests" },
  );
  $("#usage-today").textContent = String(totals[totals.length - 1] ?? 0);
  const head = document.createElement("tr");
  for (const title of ["Day", "Total", ...columns]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = title;
    if (title !== "Day") th.className = "num";
    head.append(th);
  }
  $("#usage-table thead").replaceChildren(head);
  fill($("#usage-table tbody"), labels.map((day, index) => index).reverse(), (tr, index) => {
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = labels[index];
    tr.append(th);
    cell(tr, totals[index], "num");
    for (const counts of series) cell(tr, counts[index], "num");
  });
}

for (const radio of document.querySelectorAll("input[name=usage-range]")) {
  radio.addEventListener("change", loadUsage);
}

// Packages ------------------------------------------------------------------------------------

async function packages() {
  if (state.packages === null) {
    state.packages = await walk("source/packages", {}, "packages");
  }
  return state.packages;
}

function loadPackages() {
  run("packages", async (current) => {
    const found = await packages();
    if (current()) renderPackages(found);
  });
}

function sortValue(item, sortKey, type) {
  const value = item[sortKey];
  if (value === null || value === undefined) return null;
  if (type === "number") return Number(value);
  if (typeof value === "boolean") return value ? "online" : "offline";
  return String(value);
}

function renderPackages(found) {
  $("#packages-empty").hidden = found.length > 0;
  const { key: sortKey, ascending } = state.sort;
  const header = document.querySelector(`#packages-table th[data-key="${sortKey}"]`);
  const type = header.dataset.type;
  const sorted = [...found].sort((a, b) => {
    const x = sortValue(a, sortKey, type);
    const y = sortValue(b, sortKey, type);
    if (x === y) return a.package < b.package ? -1 : 1;
    if (x === null) return 1; // unknown values last, whichever the direction
    if (y === null) return -1;
    return (x < y ? -1 : 1) * (ascending ? 1 : -1);
  });
  for (const th of document.querySelectorAll("#packages-table th[data-key]")) {
    if (th === header) th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
  fill($("#packages-table tbody"), sorted, (tr, item) => {
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = item.package;
    tr.append(th);
    cell(tr, item.name);
    cell(tr, item.version);
    cell(tr, item.online ? "online" : "offline");
    cell(tr, item.price === null ? "unknown" : `${item.price} ${item.currency}`, "num");
    cell(tr, item.downloads, "num");
    cell(tr, item.votes, "num");
    cell(tr, item.rating === null ? "no votes" : Number(item.rating).toFixed(2), "num");
    cell(tr, dayOf(item.updated));
    const actions = cell(tr, "");
    actions.textContent = "";
    if (item.paid) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Buyers";
      button.setAttribute("aria-label", `Buyers of ${item.package}`);
      button.addEventListener("click", () => {
        state.buyers = { package: item.package, cursors: [""], index: 0 };
        open("buyers");
      });
      actions.append(button);
    }
  });
}

for (const th of document.querySelectorAll("#packages-table th[data-key]")) {
  th.querySelector("button").addEventListener("click", () => {
    const sortKey = th.dataset.key;
    state.sort = {
      key: sortKey,
      ascending: state.sort.key === sortKey ? !state.sort.ascending : true,
    };
    if (state.packages !== null) renderPackages(state.packages);
  });
}

// Sales ---------------------------------------------------------------------------------------

const REFUNDS = new Set(["Refunded", "Chargeback"]);
const SALES_COLUMNS = [
  "txn_id",
  "date",
  "package",
  "allowed_for",
  "nickname",
  "status",
  "gross",
  "commission",
  "fee",
  "net",
  "currency",
  "payment_platform",
];

function prepareSales() {
  run("sales", async (current) => {
    if (!state.today) await learnToday();
    if (!current()) return;
    const start = $("#sales-start");
    const end = $("#sales-end");
    start.max = end.max = state.today;
    start.min = end.min = addDays(state.today, -3650);
    if (!end.value) end.value = state.today;
    if (!start.value) start.value = addDays(state.today, -29);
    if (state.sales === null) loadSales();
  });
}

function loadSales() {
  const params = {
    start: $("#sales-start").value,
    end: $("#sales-end").value,
    status: $("#sales-status").value || null,
  };
  run("sales", async (current) => {
    let totals = [];
    const sales = await walk("source/sales", params, "sales", (page) => {
      totals = page.totals;
    });
    if (!current()) return;
    state.sales = { ...params, sales, totals };
    renderSales();
  });
}

function renderSales() {
  const { sales, totals, start, end } = state.sales;
  fill($("#sales-totals tbody"), totals, (tr, total) => {
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = total.currency;
    tr.append(th);
    for (const name of ["sales", "gross", "commission", "net", "refunds", "refunded"]) {
      cell(tr, total[name], "num");
    }
  });
  const currency = $("#sales-currency");
  const chosen = currency.value;
  currency.replaceChildren(
    ...totals.map(({ currency: code }) => new Option(code, code, false, code === chosen)),
  );
  currency.disabled = totals.length < 2;
  renderSalesChart(start, end);
  $("#sales-empty").hidden = sales.length > 0;
  $("#sales-csv").disabled = sales.length === 0;
  fill($("#sales-table tbody"), sales, (tr, sale) => {
    const refunded = REFUNDS.has(sale.status);
    if (refunded) tr.className = "refund";
    moment(cell(tr, ""), sale.date);
    cell(tr, sale.txn_id);
    cell(tr, sale.package ?? "whole source");
    cell(tr, sale.nickname);
    cell(tr, sale.status);
    cell(tr, sale.gross, "num");
    cell(tr, sale.commission, "num");
    const net = cell(tr, refunded ? "" : sale.net, "num");
    if (refunded) {
      // Not earned: the amount struck out, and why in words (the totals leave it out too).
      const amount = document.createElement("del");
      amount.textContent = sale.net;
      net.replaceChildren(amount, sale.status === "Chargeback" ? " charged back" : " refunded");
    }
    cell(tr, sale.currency);
    cell(tr, sale.payment_platform);
  });
}

function renderSalesChart(start, end) {
  const { sales } = state.sales;
  const currency = $("#sales-currency").value;
  const days = daysBetween(start, end);
  const index = new Map(days.map((day, position) => [day, position]));
  const gross = days.map(() => 0n);
  const net = days.map(() => 0n);
  const refunded = days.map(() => 0n);
  for (const sale of sales) {
    const position = index.get(dayOf(sale.date));
    if (sale.currency !== currency || position === undefined) continue;
    if (REFUNDS.has(sale.status)) refunded[position] += toUnits(sale.gross);
    else if (sale.status === "Completed") {
      gross[position] += toUnits(sale.gross);
      net[position] += toUnits(sale.net);
    }
  }
  const canvas = $("#sales-chart");
  if (!currency) {
    charts.clear(canvas);
    $("#sales-days tbody").replaceChildren();
    return;
  }
  charts.draw(
    canvas,
    "bar",
    days,
    [
      { label: `gross (${currency})`, data: gross.map(unitsToNumber) },
      { label: `net (${currency})`, data: net.map(unitsToNumber) },
      { label: `refunded (${currency})`, data: refunded.map(unitsToNumber) },
    ],
    { yTitle: currency },
  );
  const shown = days.map((day, position) => position).filter((position) => gross[position] || refunded[position]);
  fill($("#sales-days tbody"), shown.reverse(), (tr, position) => {
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = days[position];
    tr.append(th);
    cell(tr, fromUnits(gross[position]), "num");
    cell(tr, fromUnits(net[position]), "num");
    cell(tr, fromUnits(refunded[position]), "num");
  });
}

$("#sales-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const start = $("#sales-start").value;
  const end = $("#sales-end").value;
  if (!start || !end || start > end) {
    notice("request", "Choose a start day on or before the end day.");
    return;
  }
  loadSales();
});

$("#sales-currency").addEventListener("change", () => {
  if (state.sales) renderSalesChart(state.sales.start, state.sales.end);
});

$("#sales-csv").addEventListener("click", () => {
  const { sales, start, end } = state.sales;
  download(`sales-${start}-${end}.csv`, toCsv(SALES_COLUMNS, sales));
});

// Buyers --------------------------------------------------------------------------------------

const BUYER_COLUMNS = [
  "date",
  "nickname",
  "status",
  "allowed_for",
  "total",
  "commission",
  "fee",
  "net",
  "currency",
  "txn_id",
  "profile_url",
  "payment_platform",
];

function prepareBuyers() {
  run("buyers", async (current) => {
    const paid = (await packages()).filter((item) => item.paid);
    if (!current()) return;
    const select = $("#buyers-package");
    const chosen = state.buyers.package ?? paid[0]?.package ?? null;
    select.replaceChildren(
      ...paid.map((item) => new Option(`${item.name} (${item.package})`, item.package, false, item.package === chosen)),
    );
    if (chosen === null) {
      $("#buyers-summary").textContent = "";
      $("#buyers-empty").textContent = "None of your packages is paid: no buyers to show.";
      $("#buyers-empty").hidden = false;
      return;
    }
    state.buyers.package = chosen;
    loadBuyers();
  });
}

function loadBuyers() {
  const { package: chosen, cursors, index } = state.buyers;
  run("buyers", async (current) => {
    const page = await call("package/buyers", {
      package: chosen,
      limit: BUYERS_PAGE,
      cursor: cursors[index],
    });
    if (!current()) return;
    state.buyers.cursors = cursors.slice(0, index + 1);
    if (page.has_more && page.cursor) state.buyers.cursors.push(page.cursor);
    const total = Number(page.total);
    const pages = Math.max(1, Math.ceil(total / page.limit));
    $("#buyers-summary").textContent = `${chosen}: ${total} buyers; page ${index + 1} of ${pages}`;
    $("#buyers-empty").textContent = "No buyers of this package yet.";
    $("#buyers-empty").hidden = page.buyers.length > 0;
    $("#buyers-previous").disabled = index === 0;
    $("#buyers-next").disabled = !page.has_more;
    $("#buyers-csv").disabled = total === 0;
    fill($("#buyers-table tbody"), page.buyers, (tr, buyer) => {
      if (REFUNDS.has(buyer.status)) tr.className = "refund";
      cell(tr, buyer.date.replace("T", " "));
      cell(tr, buyer.nickname);
      cell(tr, buyer.status);
      cell(tr, buyer.allowed_for);
      cell(tr, buyer.total, "num");
      cell(tr, buyer.commission, "num");
      cell(tr, buyer.currency);
      cell(tr, buyer.txn_id);
      cell(tr, buyer.payment_platform);
    });
  });
}

$("#buyers-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.buyers = { package: $("#buyers-package").value, cursors: [""], index: 0 };
  loadBuyers();
});

$("#buyers-next").addEventListener("click", () => {
  if (state.buyers.index + 1 < state.buyers.cursors.length) {
    state.buyers.index += 1;
    loadBuyers();
  }
});

$("#buyers-previous").addEventListener("click", () => {
  if (state.buyers.index > 0) {
    state.buyers.index -= 1;
    loadBuyers();
  }
});

$("#buyers-csv").addEventListener("click", () => {
  const chosen = state.buyers.package;
  run("buyers", async () => {
    const buyers = await walk("package/buyers", { package: chosen, cursor: "" }, "buyers");
    download(`buyers-${chosen}.csv`, toCsv(BUYER_COLUMNS, buyers));
  });
});

// Downloads -----------------------------------------------------------------------------------

function downloadsRange() {
  return Number($("#downloads-range").value);
}

function prepareDownloads() {
  run("downloads", async (current) => {
    const mine = await packages();
    if (!current()) return;
    const chosen = state.downloads ?? mine[0]?.package ?? null;
    $("#downloads-package").replaceChildren(
      ...mine.map((item) => new Option(`${item.name} (${item.package})`, item.package, false, item.package === chosen)),
    );
    if (chosen === null) return;
    state.downloads = chosen;
    loadDownloads();
  });
}

function loadDownloads() {
  const chosen = state.downloads;
  if (chosen === null) return;
  run("downloads", async (current) => {
    // The last ``range`` days, today included (UTC days: a download has no time zone).
    const report = await call("package/downloads", { package: chosen, days: downloadsRange() - 1 });
    if (current()) renderDownloads(report);
  });
}

function renderDownloads(report) {
  const labels = report.downloads.map((entry) => entry.day);
  const counts = report.downloads.map((entry) => Number(entry.downloads));
  charts.draw($("#downloads-chart"), "bar", labels, [{ label: report.package, data: counts }], {
    yTitle: "downloads",
  });
  $("#downloads-today").textContent = String(counts[counts.length - 1] ?? 0);
  $("#downloads-total").textContent = String(report.total);
  fill($("#downloads-table tbody"), labels.map((day, index) => index).reverse(), (tr, index) => {
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = labels[index];
    tr.append(th);
    cell(tr, counts[index], "num");
  });
}

$("#downloads-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.downloads = $("#downloads-package").value;
  loadDownloads();
});

$("#downloads-range").addEventListener("change", () => {
  state.downloads = $("#downloads-package").value;
  loadDownloads();
});

// Webhooks ------------------------------------------------------------------------------------

function loadEndpoints() {
  run("webhooks", async (current) => {
    const { endpoints } = await call("webhook/list");
    if (!current()) return;
    $("#webhooks-empty").hidden = endpoints.length > 0;
    fill($("#webhooks-table tbody"), endpoints, (tr, endpoint) => {
      if (!endpoint.enabled) tr.className = "refund";
      cell(tr, endpoint.id);
      cell(tr, endpoint.url);
      cell(tr, endpoint.events.join(", "));
      cell(tr, endpoint.enabled ? "enabled" : `disabled: ${endpoint.disabled_reason ?? "by hand"}`);
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Delivery log";
      button.setAttribute("aria-label", `Delivery log of ${endpoint.id}`);
      button.addEventListener("click", () => openLog(endpoint.id));
      const td = document.createElement("td");
      td.append(button);
      tr.append(td);
    });
    if (state.webhook.endpoint && !endpoints.some((e) => e.id === state.webhook.endpoint)) {
      $("#webhook-log-box").hidden = true;
    }
  });
}

function openLog(endpoint) {
  state.webhook = { endpoint, cursor: null };
  $("#webhook-log-title").textContent = `Delivery log of ${endpoint}`;
  $("#webhook-sent").textContent = "";
  $("#webhook-log-box").hidden = false;
  $("#webhook-log-title").focus();
  loadLog(false);
}

function attemptRow(tr, attempt) {
  if (!attempt.ok) tr.className = "refund";
  moment(cell(tr, ""), attempt.attempted_at);
  cell(tr, attempt.event_id);
  cell(tr, attempt.ok ? "delivered" : "failed");
  cell(tr, attempt.status, "num");
  cell(tr, attempt.duration_ms, "num");
  cell(tr, attempt.response);
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Resend";
  button.setAttribute("aria-label", `Resend ${attempt.event_id}`);
  button.addEventListener("click", () => resend(attempt.event_id));
  const td = document.createElement("td");
  td.append(button);
  tr.append(td);
}

/** The log's newest page, or (``older``) the page after the rows shown. */
function loadLog(older) {
  const { endpoint, cursor } = state.webhook;
  run("webhooks", async (current) => {
    const page = await call("webhook/deliveries", {
      endpoint,
      limit: 25,
      cursor: older ? cursor : null,
    });
    if (!current()) return;
    state.webhook.cursor = page.cursor;
    const body = $("#webhook-log tbody");
    const shown = older ? [...body.children] : [];
    fill(body, page.attempts, attemptRow);
    body.prepend(...shown);
    $("#webhook-log-empty").hidden = shown.length + page.attempts.length > 0;
    $("#webhook-log-older").disabled = !page.has_more;
  });
}

function sent(attempt, what) {
  const result = attempt.ok ? "delivered" : "not delivered";
  const status = attempt.status === null ? attempt.response : `HTTP ${attempt.status}`;
  $("#webhook-sent").textContent = `${what} ${attempt.event_id}: ${result} (${status}).`;
  loadLog(false);
}

function resend(eventId) {
  const { endpoint } = state.webhook;
  run("webhooks", async () => {
    sent(await send("webhook/redeliver", { endpoint, event: eventId }), "Resent");
  });
}

$("#webhook-test-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const { endpoint } = state.webhook;
  const type = $("#webhook-test-type").value;
  run("webhooks", async () => {
    sent(await send("webhook/test", { endpoint, event_type: type }), "Test event");
  });
});

$("#webhook-log-older").addEventListener("click", () => loadLog(true));

// Money ---------------------------------------------------------------------------------------

const PAYOUT_COLUMNS = [
  "id",
  "created_at",
  "period",
  "amount",
  "currency",
  "test",
  "status",
  "failure_message",
  "entry_kind",
  "entry_txn_id",
  "entry_pending",
  "entry_available",
];

function loadMoney() {
  run("money", async (current) => {
    const { balances } = await call("source/balance");
    const payouts = await walk("source/payouts", {}, "payouts");
    if (!current()) return;
    state.payouts = payouts;
    renderMoney(balances, payouts);
  });
}

function renderMoney(balances, payouts) {
  const label = (b) => (b.test ? `${b.currency} (test)` : b.currency);
  $("#money-empty").hidden = balances.length > 0;
  fill($("#money-balances tbody"), balances, (tr, b) => {
    const th = document.createElement("th");
    th.scope = "row";
    th.textContent = label(b);
    tr.append(th);
    cell(tr, b.pending, "num");
    cell(tr, b.available, "num");
    cell(tr, b.next_payout.date);
    cell(tr, b.next_payout.amount, "num");
    cell(tr, b.next_payout.blocked ?? "");
  });
  const canvas = $("#money-chart");
  if (balances.length === 0) charts.clear(canvas);
  else {
    charts.draw(
      canvas,
      "bar",
      balances.map(label),
      [
        { label: "Pending", data: balances.map((b) => Number(b.pending)) },
        { label: "Available", data: balances.map((b) => Number(b.available)) },
      ],
      { yTitle: "Balance" },
    );
  }
  $("#payouts-empty").hidden = payouts.length > 0;
  $("#money-csv").disabled = payouts.length === 0;
  fill($("#payouts-table tbody"), payouts, (tr, p) => {
    if (p.status === "failed") tr.className = "refund";
    moment(cell(tr, ""), p.created_at);
    cell(tr, p.period);
    cell(tr, p.amount, "num");
    cell(tr, p.test ? `${p.currency} (test)` : p.currency);
    cell(tr, p.status);
    cell(tr, p.entries.length, "num");
    cell(tr, p.failure_message ?? "");
  });
}

$("#money-csv").addEventListener("click", () => {
  // One line per entry paid, each with its payout: a spreadsheet sums them as it likes.
  const rows = state.payouts.flatMap((p) =>
    p.entries.map((e) => ({
      ...p,
      entry_kind: e.kind,
      entry_txn_id: e.txn_id,
      entry_pending: e.pending,
      entry_available: e.available,
    })),
  );
  download(`payouts-${state.today ?? "all"}.csv`, toCsv(PAYOUT_COLUMNS, rows));
});

$("#refund-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const txnId = $("#refund-txn").value.trim();
  const amount = $("#refund-amount").value.trim();
  if (!txnId) {
    notice("request", "Enter the transaction id of the purchase to refund.");
    return;
  }
  const what = amount ? `${amount} of ${txnId}` : `all that is left of ${txnId}`;
  // A refund gives the buyer's money back: it is asked once more, in words.
  if (!window.confirm(`Refund ${what} to its buyer? This cannot be undone.`)) return;
  run("money", async () => {
    const made = await send("purchase/refund", amount ? { txn_id: txnId, amount } : { txn_id: txnId });
    $("#refund-result").textContent =
      `Refunded ${made.amount} ${made.currency} of ${made.txn_id} (${made.status}).`;
    $("#refund-txn").value = "";
    $("#refund-amount").value = "";
    state.sales = null; // the ledger changed
    loadMoney();
  });
});

// Start ---------------------------------------------------------------------------------------

if (key.get()) signedIn();
else show("sign-in");

// Whitelist -----------------------------------------------------------------------------------

function prepareWhitelist() {
  run("whitelist", async (current) => {
    const found = await packages();
    if (!current()) return;
    const chosen = state.whitelist.package ?? found[0]?.package ?? null;
    $("#whitelist-package").replaceChildren(
      ...found.map((item) => new Option(`${item.name} (${item.package})`, item.package, false, item.package === chosen)),
    );
    state.whitelist = { package: chosen, page: 1 };
    if (chosen !== null) loadWhitelist();
  });
}

function loadWhitelist() {
  const { package: chosen, page } = state.whitelist;
  run("whitelist", async (current) => {
    const found = await call("package/whitelist", { package: chosen, limit: WHITELIST_PAGE, page });
    if (!current()) return;
    const pages = Math.max(1, Math.ceil(found.total / found.limit));
    $("#whitelist-summary").textContent = `${chosen}: ${found.total} devices; page ${found.page} of ${pages}`;
    $("#whitelist-empty").hidden = found.whitelist.length > 0;
    $("#whitelist-previous").disabled = found.page <= 1;
    $("#whitelist-next").disabled = found.start + found.whitelist.length >= found.total;
    fill($("#whitelist-table tbody"), found.whitelist, (tr, entry) => {
      cell(tr, entry.udid);
      cell(tr, entry.description);
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Remove";
      button.setAttribute("aria-label", `Remove ${entry.udid}`);
      button.addEventListener("click", () => changeWhitelist("remove", { udid: [entry.udid] }));
      const td = document.createElement("td");
      td.append(button);
      tr.append(td);
    });
  });
}

/** A whitelist write, then the page again; what changed is said in words. */
function changeWhitelist(verb, fields) {
  const chosen = state.whitelist.package;
  run("whitelist", async () => {
    const done = await send(`package/whitelist/${verb}`, { package: chosen, ...fields });
    const parts = ["added", "updated", "removed", "unchanged"].filter((name) => done[name] > 0);
    $("#whitelist-changed").textContent =
      `${chosen}: ${parts.map((name) => `${done[name]} ${name}`).join(", ") || "nothing changed"}.`;
    loadWhitelist();
  });
}

$("#whitelist-form").addEventListener("submit", (event) => {
  event.preventDefault();
  state.whitelist = { package: $("#whitelist-package").value, page: 1 };
  $("#whitelist-changed").textContent = "";
  loadWhitelist();
});

$("#whitelist-add-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const udids = $("#whitelist-udids").value.split(/[\s,]+/).filter((udid) => udid);
  if (udids.length === 0) return;
  const description = $("#whitelist-description").value;
  changeWhitelist("add", { udid: udids, description });
  $("#whitelist-udids").value = "";
});

$("#whitelist-previous").addEventListener("click", () => {
  if (state.whitelist.page > 1) {
    state.whitelist.page -= 1;
    loadWhitelist();
  }
});

$("#whitelist-next").addEventListener("click", () => {
  state.whitelist.page += 1;
  loadWhitelist();
});
