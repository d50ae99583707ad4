// The one place that knows how the dashboard authenticates: every API call takes its headers from
// authHeaders(). Today an API key the user pastes, kept for the browser tab (sessionStorage) and
// sent as X-Service-Key; a cookie session would change only this module.
const STORAGE_KEY = 'adp.dashboard.apiKey';

export function currentKey(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function signIn(key: string): void {
  sessionStorage.setItem(STORAGE_KEY, key);
}

export function signOut(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

export function authHeaders(): Record<string, string> {
  const key = currentKey();
  return key === null ? {} : { 'X-Service-Key': key };
}

/** The key as the header shows it: its kind prefix and last four characters, never the whole secret. */
export function maskedKey(key: string): string {
  const prefix = /^[a-z]+_[a-z]+_/.exec(key)?.[0] ?? '';
  return `${prefix}…${key.slice(-4)}`;
}
