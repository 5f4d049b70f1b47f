/**
 * A parser for `timestamptz` as PostgreSQL prints it (DateStyle ISO): `2024-01-05 10:11:12.345678+00`,
 * the offset as `+HH`, `+HH:MM` or `+HH:MM:SS`. pg's own parser (postgres-date) runs three regular
 * expressions per value; a processing batch reads about five thousand timestamps (each claimed
 * event's two, each locked profile's two), and that parser was 3% of the worker's CPU in a profile
 * (docs/benchmarks.md). This one reads the fixed positions and hands anything else (BC years,
 * years before 1000, infinity) to the parser it replaces, so every value parses as before.
 */
export function createTimestamptzParser(fallback: (text: string) => unknown): (text: string) => unknown {
  return (s) => {
    if (
      s.length < 22 ||
      s.charCodeAt(4) !== 45 || // -
      s.charCodeAt(7) !== 45 ||
      s.charCodeAt(10) !== 32 || // space
      s.charCodeAt(13) !== 58 || // :
      s.charCodeAt(16) !== 58
    ) {
      return fallback(s);
    }
    const year = digits(s, 0, 4);
    const month = digits(s, 5, 7);
    const day = digits(s, 8, 10);
    const hour = digits(s, 11, 13);
    const minute = digits(s, 14, 16);
    const second = digits(s, 17, 19);
    // Date.UTC reads years 0–99 as 1900–1999: leave those to the fallback, which corrects it.
    if (year < 1000 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return fallback(s);
    let i = 19;
    let ms = 0;
    if (s.charCodeAt(i) === 46) {
      // The fraction's first three digits are the milliseconds; the rest (microseconds) is dropped,
      // as postgres-date drops it.
      i++;
      let scale = 100;
      while (i < s.length && isDigit(s.charCodeAt(i))) {
        ms += (s.charCodeAt(i) - 48) * scale;
        scale /= 10;
        i++;
      }
      ms = Math.trunc(ms);
    }
    const sign = s.charCodeAt(i);
    if (sign !== 43 && sign !== 45) return fallback(s); // + or -
    let offset = 0;
    let unit = 3600;
    i++;
    while (unit >= 1) {
      const part = digits(s, i, i + 2);
      if (part < 0) return fallback(s);
      offset += part * unit;
      i += 2;
      unit /= 60;
      if (i === s.length) break;
      if (s.charCodeAt(i) !== 58 || unit < 1) return fallback(s);
      i++;
    }
    if (i !== s.length) return fallback(s);
    const utc = Date.UTC(year, month - 1, day, hour, minute, second, ms);
    return new Date(utc - (sign === 43 ? 1 : -1) * offset * 1000);
  };
}

const isDigit = (c: number) => c >= 48 && c <= 57;

/** The decimal number in s[from, to), or -1 if a character there is not a digit. */
function digits(s: string, from: number, to: number): number {
  if (to > s.length) return -1;
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = s.charCodeAt(i);
    if (!isDigit(c)) return -1;
    n = n * 10 + (c - 48);
  }
  return n;
}
