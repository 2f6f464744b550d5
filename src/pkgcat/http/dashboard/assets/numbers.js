// Days and money as the API writes them, handled without floating point where it matters.

const DAY_MS = 86_400_000;

/** "YYYY-MM-DD" of a date the API wrote: ISO 8601 (shape A, sales, buyers) or DD-MM-YYYY (shape B usage). */
export function dayOf(text) {
  const dmy = /^(\d{2})-(\d{2})-(\d{4})/.exec(text);
  return dmy ? `${dmy[3]}-${dmy[2]}-${dmy[1]}` : text.slice(0, 10);
}

/** The day ``count`` days after ``day`` (before, when negative); calendar days, no time zone. */
export function addDays(day, count) {
  const [year, month, date] = day.split("-").map(Number);
  return new Date(Date.UTC(year, month - 1, date) + count * DAY_MS).toISOString().slice(0, 10);
}

/** Every day from ``first`` to ``last``, both included. */
export function daysBetween(first, last) {
  const days = [];
  for (let day = first; day <= last; day = addDays(day, 1)) days.push(day);
  return days;
}

const SCALE = 4; // money is summed in ten-thousandths: exact for the API's decimal strings

/** A decimal string ("12.50") as an integer count of ten-thousandths. */
export function toUnits(amount) {
  const negative = amount.startsWith("-");
  const [whole, fraction = ""] = amount.replace(/^[-+]/, "").split(".");
  const units = BigInt(whole || "0") * 10n ** BigInt(SCALE) + BigInt(fraction.padEnd(SCALE, "0").slice(0, SCALE) || "0");
  return negative ? -units : units;
}

/** Ten-thousandths back to a decimal string with two decimals (more when they are not zero). */
export function fromUnits(units) {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(SCALE + 1, "0");
  let fraction = digits.slice(-SCALE);
  while (fraction.length > 2 && fraction.endsWith("0")) fraction = fraction.slice(0, -1);
  return `${negative ? "-" : ""}${digits.slice(0, -SCALE)}.${fraction}`;
}

/** Ten-thousandths as a number, for a chart's axis. */
export function unitsToNumber(units) {
  return Number(units) / 10 ** SCALE;
}
