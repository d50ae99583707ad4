// ISO 8601 timestamps as the vendor's clients send them. Date.parse is not used: it accepts
// locale-dependent forms, reads a zone-less date-time as local time, and rejects the .NET
// clients' seven fractional digits in some engines.

const ISO_8601 =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31] as const;

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/** Days in a month, month 0..11 as in Date. */
export function daysInMonth(year: number, month: number): number {
  return month === 1 && isLeapYear(year) ? 29 : (DAYS_IN_MONTH[month] ?? 31);
}

/**
 * Epoch milliseconds of an ISO 8601 date or date-time, or null when the text is not one.
 *
 * Accepted: `2018-03-01`, `2018-03-01T00:00Z`, `2018-03-01T00:00:00Z`, any number of fractional
 * digits (`.000Z`, `.0000000Z`; digits past the millisecond are truncated, not rounded, so a
 * timestamp never moves into the next millisecond), offsets `+01:00`, `-0530`, `+01`. A date
 * alone is midnight UTC; a date-time without a zone is read as UTC, since a server's local zone
 * must not change what a request means.
 */
export function parseIsoTimestamp(text: string): number | null {
  const m = ISO_8601.exec(text.trim());
  if (m === null) return null;
  const year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  const hour = m[4] === undefined ? 0 : Number(m[4]);
  const minute = m[5] === undefined ? 0 : Number(m[5]);
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const millis = m[7] === undefined ? 0 : Number(m[7].slice(0, 3).padEnd(3, '0'));
  if (month < 1 || month > 12) return null;
  if (day < 1 || day > daysInMonth(year, month - 1)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;

  let offsetMinutes = 0;
  const zone = m[8];
  if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    const offsetHours = Number(digits.slice(0, 2));
    const offsetMins = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
    if (offsetHours > 23 || offsetMins > 59) return null;
    offsetMinutes = sign * (offsetHours * 60 + offsetMins);
  }

  // Date.UTC maps years 0..99 to 1900..1999; setting the full year afterwards avoids that.
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, second, millis));
  date.setUTCFullYear(year);
  const ms = date.getTime() - offsetMinutes * 60_000;
  return Number.isFinite(ms) ? ms : null;
}
