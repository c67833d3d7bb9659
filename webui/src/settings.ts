// The page's settings, kept in localStorage: the system prompt, sampling (a field left
// empty is the server's default), the API key, the theme and the model last picked.
import type { Sampling } from './api.js';

export type Theme = 'system' | 'light' | 'dark';

export interface Settings {
  system: string;
  /** Each sampling field as typed ('' = the server's default). */
  sampling: Record<keyof Sampling, string>;
  apiKey: string;
  theme: Theme;
  model: string;
}

/** The sampling fields: request name, label, input bounds. */
export const SAMPLING_FIELDS: { key: keyof Sampling; label: string; min: number; max?: number; step: number }[] = [
  { key: 'temperature', label: 'Temperature', min: 0, max: 5, step: 0.05 },
  { key: 'top_k', label: 'Top K', min: 0, step: 1 },
  { key: 'top_p', label: 'Top P', min: 0, max: 1, step: 0.01 },
  { key: 'min_p', label: 'Min P', min: 0, max: 1, step: 0.01 },
  { key: 'repeat_penalty', label: 'Repeat penalty', min: 0, max: 5, step: 0.05 },
  { key: 'max_tokens', label: 'Max tokens', min: 1, step: 1 },
  { key: 'seed', label: 'Seed', min: 0, step: 1 },
];

const KEY = 'llama-ts.settings';

export function defaults(): Settings {
  const sampling = Object.fromEntries(SAMPLING_FIELDS.map((f) => [f.key, ''])) as Settings['sampling'];
  return { system: '', sampling, apiKey: '', theme: 'system', model: '' };
}

export function loadSettings(): Settings {
  const d = defaults();
  try {
    const s = JSON.parse(localStorage.getItem(KEY) ?? '{}') as Partial<Settings>;
    return {
      system: typeof s.system === 'string' ? s.system : d.system,
      sampling: { ...d.sampling, ...(s.sampling ?? {}) },
      apiKey: typeof s.apiKey === 'string' ? s.apiKey : d.apiKey,
      theme: s.theme === 'light' || s.theme === 'dark' ? s.theme : 'system',
      model: typeof s.model === 'string' ? s.model : '',
    };
  } catch {
    return d;
  }
}

export function saveSettings(s: Settings): void {
  localStorage.setItem(KEY, JSON.stringify(s));
}

/** The sampling fields that hold a number, as the request sends them. */
export function sampling(s: Settings): Sampling {
  const out: Sampling = {};
  for (const f of SAMPLING_FIELDS) {
    const raw = s.sampling[f.key].trim();
    const v = Number(raw);
    if (raw !== '' && Number.isFinite(v)) out[f.key] = v;
  }
  return out;
}

/** Applies the theme: `system` follows prefers-color-scheme. */
export function applyTheme(t: Theme): void {
  if (t === 'system') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = t;
}
