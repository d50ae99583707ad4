// The one place that knows how the dashboard authenticates: a session cookie the browser keeps
// (HttpOnly: this script never sees it) and, for state-changing calls, the session's CSRF token in
// X-CSRF-Token. The token lives in this module's memory only and is read again from
// GET /dashboard/api/session after a reload.

/** GET /dashboard/api/session and POST /dashboard/api/login. */
export interface SessionView {
  readonly signed_in: boolean;
  /** Whether "Sign in with your identity provider" is offered. */
  readonly oidc: boolean;
  readonly org_id?: string;
  readonly name?: string;
  readonly method?: 'password' | 'oidc';
  readonly expires_at?: string;
  readonly csrf_token?: string;
}

let session: SessionView = { signed_in: false, oidc: false };

export function currentSession(): SessionView {
  return session;
}

export function setSession(view: SessionView): void {
  session = view;
}

/** Forgets the session here; the server forgets it on POST /dashboard/api/logout. */
export function forgetSession(): void {
  session = { signed_in: false, oidc: session.oidc };
}

export function authHeaders(method: string): Record<string, string> {
  const token = session.csrf_token;
  return method === 'GET' || token === undefined ? {} : { 'X-CSRF-Token': token };
}
