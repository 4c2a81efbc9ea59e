// Sortable tables: a table marked data-sortable gets a button in each named column header;
// pressing it sorts the rows by that column (ascending, then descending), and the header's
// aria-sort says which way. Columns whose header has the class "num" or data-sort="num" sort
// numerically ("1,234.50 EUR" is 1234.5, "#12" is 12); a cell holding a <time datetime> sorts
// by that time; anything else by its text. Empty cells ("—") go last either way. A live
// region that swaps a table in keeps its sort: the order is remembered by the table's
// closest id and applied again (sortTables on the swapped elements; resortTables after
// values are patched in place).

const remembered = new Map(); // key of a table -> { column, direction }

function tableKey(table) {
  return table.closest("[id]")?.id || "";
}

export function numberOf(text) {
  const match = text.replace(/[\s,\u00a0\u202f']/g, "").match(/-?\d+(?:\.\d+)?/);
  return match ? Number(match[0]) : null;
}

function cellKey(cell, numeric) {
  if (!cell) return null;
  if (cell.dataset.sortValue != null) return numeric ? numberOf(cell.dataset.sortValue) : cell.dataset.sortValue;
  const time = cell.querySelector("time[datetime]");
  if (time) return time.getAttribute("datetime");
  const text = cell.textContent.trim();
  if (!text || text === "—") return null;
  return numeric ? numberOf(text) : text.toLowerCase();
}

function compareKeys(a, b, direction) {
  if (a === null && b === null) return 0;
  if (a === null) return 1; // empty last, whichever the direction
  if (b === null) return -1;
  const order = typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b), undefined, { numeric: true });
  return direction === "ascending" ? order : -order;
}

function sortBy(table, column, direction) {
  const header = table.tHead.rows[0].cells[column];
  const numeric = header.classList.contains("num") || header.dataset.sort === "num";
  const body = table.tBodies[0];
  const rows = [...body.rows].map((row, index) => ({ row, index, key: cellKey(row.cells[column], numeric) }));
  rows.sort((x, y) => compareKeys(x.key, y.key, direction) || x.index - y.index);
  for (const { row } of rows) body.append(row);
  for (const cell of table.tHead.rows[0].cells) {
    if (cell === header) cell.setAttribute("aria-sort", direction);
    else cell.removeAttribute("aria-sort");
  }
  remembered.set(tableKey(table), { column, direction });
}

function enhance(table) {
  if (!table.tHead || !table.tBodies.length || table.dataset.sortReady) return;
  table.dataset.sortReady = "1";
  [...table.tHead.rows[0].cells].forEach((header, column) => {
    const label = header.textContent.trim();
    if (!label || header.querySelector(".sr-only") || header.dataset.sort === "none") return;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "sort";
    button.append(...header.childNodes);
    header.append(button);
    button.addEventListener("click", () => {
      const now = header.getAttribute("aria-sort");
      sortBy(table, column, now === "ascending" ? "descending" : "ascending");
    });
  });
  const again = remembered.get(tableKey(table));
  if (again) sortBy(table, again.column, again.direction);
}

// Values patched in place (a best_offer frame) can leave a sorted table out of order: sort
// each table that was sorted again, by its remembered column.
export function resortTables() {
  for (const table of document.querySelectorAll("table[data-sortable][data-sort-ready]")) {
    const again = remembered.get(tableKey(table));
    if (again) sortBy(table, again.column, again.direction);
  }
}

export function sortTables(root = document) {
  const tables = root.matches?.("table[data-sortable]") ? [root] : [];
  tables.push(...(root.querySelectorAll?.("table[data-sortable]") || []));
  for (const table of tables) enhance(table);
}
