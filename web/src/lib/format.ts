// Formatting shared by every page: numbers, money, times, people.

const numberFormat = new Intl.NumberFormat('en');

export function fmtNumber(n: number | null | undefined, digits?: number): string {
  if (n === null || n === undefined || Number.isNaN(n)) return '—';
  if (digits !== undefined) return n.toFixed(digits);
  return numberFormat.format(n);
}

export function fmtMoney(n: number | null | undefined, currency?: string | null): string {
  if (n === null || n === undefined) return '—';
  if (!currency) return numberFormat.format(n);
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).format(n);
  } catch {
    return `${numberFormat.format(n)} ${currency}`;
  }
}

export function fmtTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString('en', { dateStyle: 'medium', timeStyle: 'medium' });
}

export function fmtPercent(n: number | null | undefined): string {
  if (n === null || n === undefined) return '—';
  return `${(n * 100).toFixed(1)} %`;
}

export function fmtDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 120) return `${seconds.toFixed(1)} s`;
  return `${(seconds / 60).toFixed(1)} min`;
}

export function personName(p: {
  first_name: string | null;
  last_name: string | null;
  email: string | null;
  id: string;
}) {
  const name = [p.first_name, p.last_name].filter(Boolean).join(' ');
  return name || p.email || p.id;
}

export function shortId(id: string): string {
  return id.length > 12 ? `${id.slice(0, 8)}…` : id;
}

/** What a list row shows of an account's traits: its name when it has one, else its first keys. */
export function accountLabel(traits: Record<string, unknown>): string {
  const name = traits.name;
  if (typeof name === 'string' && name.trim() !== '') return name;
  const keys = Object.keys(traits);
  return keys.length === 0 ? '—' : keys.slice(0, 3).join(', ') + (keys.length > 3 ? '…' : '');
}
