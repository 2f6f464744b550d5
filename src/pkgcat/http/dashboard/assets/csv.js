// CSV files made in the browser from what the API returned, and saved as a download.

// Buyers' nicknames and transaction ids come from storefronts: a value a spreadsheet would
// run as a formula gets a leading ' (OWASP, "CSV Injection"), a plain number apart, and a
// control character is written as an escape (\x1b), as `pkgcat client --csv` does.
const FORMULA = /^[=+\-@\t\r]/;
const NUMBER = /^[+-]?\d+(\.\d+)?$/;
const HIDDEN = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

function escaped(character) {
  const code = character.charCodeAt(0);
  return code < 0x100
    ? `\\x${code.toString(16).padStart(2, "0")}`
    : `\\u${code.toString(16).padStart(4, "0")}`;
}

/** The text a spreadsheet shows as it is: formulas defused, control characters visible. */
function cellText(value) {
  const text = value === null || value === undefined ? "" : String(value);
  const defused = FORMULA.test(text) && !NUMBER.test(text) ? `'${text}` : text;
  return defused.replace(HIDDEN, escaped);
}

function field(value) {
  const text = cellText(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** RFC 4180 text: a header of ``columns`` then one line per row (``row[column]``). */
export function toCsv(columns, rows) {
  const lines = [columns.map(field).join(",")];
  for (const row of rows) lines.push(columns.map((column) => field(row[column])).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

/** Offers ``text`` as a file named ``filename``. */
export function download(filename, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
