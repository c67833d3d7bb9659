// Python's strftime in the C locale, for templates that print today's date
// (`strftime_now("%d %b %Y")` in Llama 3.2's). Local time, as Python's datetime.now().

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

function dayOfYear(d: Date): number {
  const start = new Date(d.getFullYear(), 0, 1);
  return Math.round((new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime() - start.getTime()) / 86400000) + 1;
}

/** Formats `date` like Python's `date.strftime(format)`; `%-d` style (no padding) as glibc. */
export function strftime(date: Date, format: string): string {
  return format.replace(/%(-?)([a-zA-Z%])/g, (whole, noPad: string, c: string) => {
    const num = (n: number, width: number) => (noPad ? String(n) : String(n).padStart(width, '0'));
    const h12 = date.getHours() % 12 || 12;
    switch (c) {
      case 'a':
        return DAYS[date.getDay()]!.slice(0, 3);
      case 'A':
        return DAYS[date.getDay()]!;
      case 'b':
      case 'h':
        return MONTHS[date.getMonth()]!.slice(0, 3);
      case 'B':
        return MONTHS[date.getMonth()]!;
      case 'd':
        return num(date.getDate(), 2);
      case 'e':
        return noPad ? String(date.getDate()) : String(date.getDate()).padStart(2, ' ');
      case 'H':
        return num(date.getHours(), 2);
      case 'I':
        return num(h12, 2);
      case 'j':
        return num(dayOfYear(date), 3);
      case 'm':
        return num(date.getMonth() + 1, 2);
      case 'M':
        return num(date.getMinutes(), 2);
      case 'p':
        return date.getHours() < 12 ? 'AM' : 'PM';
      case 'S':
        return num(date.getSeconds(), 2);
      case 'y':
        return num(date.getFullYear() % 100, 2);
      case 'Y':
        return String(date.getFullYear());
      case '%':
        return '%';
      default:
        return whole;
    }
  });
}

/** A Date from llama.node's `now` (seconds or milliseconds since the epoch, or date text). */
export function toDate(now: Date | number | string | undefined): Date {
  if (now === undefined) return new Date();
  if (now instanceof Date) return now;
  if (typeof now === 'number') return new Date(now < 1e11 ? now * 1000 : now);
  const n = Number(now);
  if (now.trim() !== '' && Number.isFinite(n)) return toDate(n);
  const d = new Date(now);
  if (Number.isNaN(d.getTime())) throw new TypeError(`now: cannot read ${JSON.stringify(now)} as a date`);
  return d;
}
