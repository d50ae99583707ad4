// Calls the JSON API with the signed-in session (the cookie goes by itself; auth.ts adds the CSRF header). Errors come back as ApiError with the API's own code
// (native `{"error":{code,message}}` or the vendor's `{code,message}`), never a bare string.
import { authHeaders } from './auth.js';

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Called on every 401, so the app can return to the sign-in page. */
let onUnauthorized: (error: ApiError) => void = () => undefined;

export function setUnauthorizedHandler(handler: (error: ApiError) => void): void {
  onUnauthorized = handler;
}

export interface RequestOptions {
  /** Leave a 401 to the caller (the sign-in page) instead of returning to the sign-in page. */
  readonly handleUnauthorized?: boolean;
}

export async function apiRequest<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers: { ...authHeaders(method), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    throw new ApiError(0, 'NetworkError', 'The service could not be reached. Is it running?');
  }
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (!response.ok) {
    const error = errorOf(response.status, parsed);
    if (response.status === 401 && options.handleUnauthorized !== false) onUnauthorized(error);
    throw error;
  }
  return parsed as T;
}

function errorOf(status: number, body: unknown): ApiError {
  const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
  const inner = typeof record['error'] === 'object' && record['error'] !== null ? (record['error'] as Record<string, unknown>) : record;
  const code = typeof inner['code'] === 'string' ? inner['code'] : String(status);
  const message = typeof inner['message'] === 'string' ? inner['message'] : `The service answered ${status}.`;
  return new ApiError(status, code, message);
}

export function describeError(error: unknown): string {
  if (error instanceof ApiError) return error.status === 0 ? error.message : `${error.message} (${error.status} ${error.code})`;
  return error instanceof Error ? error.message : String(error);
}
