// Tables marked "stack" become one card per row on a phone (CSS, max-width 600px): each cell
// is shown under its column's name, copied here from the table's header row.
document.querySelectorAll("table.stack").forEach((table) => {
  const names = Array.from(table.querySelectorAll("thead th"), (th) => th.textContent.trim());
  table.querySelectorAll("tbody tr").forEach((row) => {
    let column = 0;
    for (const cell of row.children) {
      if (cell.colSpan === 1 && names[column]) cell.dataset.label = names[column];
      column += cell.colSpan;
    }
  });
});
