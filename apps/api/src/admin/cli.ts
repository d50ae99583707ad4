// `npm run admin -- <command>`: the admin API from a terminal. Reads the server's address from
// ADP_URL (default http://127.0.0.1:8080) and the token from ADMIN_TOKEN; prints the API's JSON
// answer on stdout. Exit status 0 on success, 1 when the server refuses or cannot be reached, 2 for
// a command line it does not understand (with the usage on stderr).
import { parseArgs } from 'node:util';

export const ADMIN_CLI_USAGE = `Usage: npm run admin -- <command>

  org create --name NAME --plan free|paid [--external-id ID]
  org list
  org get ORG_ID
  org disable ORG_ID
  key create --org ORG_ID --kind live|test [--name NAME]
  key list --org ORG_ID
  key revoke --org ORG_ID KEY_ID
  metering export --hour YYYY-MM-DDTHH
  metering list --from YYYY-MM-DDTHH --to YYYY-MM-DDTHH

Environment: ADP_URL (default http://127.0.0.1:8080), ADMIN_TOKEN (required).`;

export interface AdminCliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  stdout(text: string): void;
  stderr(text: string): void;
  readonly fetch: typeof fetch;
}

interface AdminRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly body?: Record<string, string>;
}

/** A command line the CLI does not understand; its message goes to stderr with the usage. */
class UsageError extends Error {
  override name = 'UsageError';
}

function required(value: string | undefined, flag: string): string {
  if (value === undefined || value === '') throw new UsageError(`${flag} is required`);
  return value;
}

function segment(value: string): string {
  return encodeURIComponent(value);
}

/** The request a command line asks for. Throws UsageError for anything else. */
export function parseAdminCommand(argv: readonly string[]): AdminRequest {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        plan: { type: 'string' },
        'external-id': { type: 'string' },
        org: { type: 'string' },
        kind: { type: 'string' },
        hour: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
      },
    });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  const [noun, verb, argument, ...rest] = positionals;
  if (rest.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])}`);
  const command = `${noun ?? ''} ${verb ?? ''}`;
  const noArgument = () => {
    if (argument !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(argument)}`);
  };
  switch (command) {
    case 'org create': {
      noArgument();
      const plan = required(values.plan, '--plan');
      if (plan !== 'free' && plan !== 'paid') throw new UsageError('--plan must be free or paid');
      const externalId = values['external-id'];
      return {
        method: 'POST',
        path: '/admin/v1/organizations',
        body: { name: required(values.name, '--name'), plan, ...(externalId === undefined ? {} : { external_id: externalId }) },
      };
    }
    case 'org list':
      noArgument();
      return { method: 'GET', path: '/admin/v1/organizations' };
    case 'org get':
      return { method: 'GET', path: `/admin/v1/organizations/${segment(required(argument, 'ORG_ID'))}` };
    case 'org disable':
      return { method: 'POST', path: `/admin/v1/organizations/${segment(required(argument, 'ORG_ID'))}/disable` };
    case 'key create': {
      noArgument();
      const kind = required(values.kind, '--kind');
      if (kind !== 'live' && kind !== 'test') throw new UsageError('--kind must be live or test');
      return {
        method: 'POST',
        path: `/admin/v1/organizations/${segment(required(values.org, '--org'))}/keys`,
        body: { kind, ...(values.name === undefined ? {} : { name: values.name }) },
      };
    }
    case 'key list':
      noArgument();
      return { method: 'GET', path: `/admin/v1/organizations/${segment(required(values.org, '--org'))}/keys` };
    case 'key revoke':
      return {
        method: 'DELETE',
        path: `/admin/v1/organizations/${segment(required(values.org, '--org'))}/keys/${segment(required(argument, 'KEY_ID'))}`,
      };
    case 'metering export':
      noArgument();
      return { method: 'POST', path: '/admin/v1/metering/export', body: { hour: required(values.hour, '--hour') } };
    case 'metering list':
      noArgument();
      return {
        method: 'GET',
        path: `/admin/v1/metering?${new URLSearchParams({ from: required(values.from, '--from'), to: required(values.to, '--to') }).toString()}`,
      };
    default:
      throw new UsageError(noun === undefined ? 'no command given' : `unknown command ${JSON.stringify(command.trim())}`);
  }
}

/** Runs one command; resolves to the exit status. */
export async function runAdminCli(argv: readonly string[], io: AdminCliIo): Promise<number> {
  let request: AdminRequest;
  try {
    request = parseAdminCommand(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`error: ${err.message}\n\n${ADMIN_CLI_USAGE}\n`);
    return 2;
  }
  const token = io.env['ADMIN_TOKEN'];
  if (!token) {
    io.stderr('error: ADMIN_TOKEN is not set\n');
    return 2;
  }
  const base = io.env['ADP_URL'] || 'http://127.0.0.1:8080';
  let url: URL;
  try {
    url = new URL(request.path, base);
  } catch {
    io.stderr(`error: ADP_URL is not a URL: ${JSON.stringify(base)}\n`);
    return 2;
  }
  let response: Response;
  try {
    response = await io.fetch(url, {
      method: request.method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(request.body ? { 'content-type': 'application/json' } : {}),
      },
      ...(request.body ? { body: JSON.stringify(request.body) } : {}),
    });
  } catch (err) {
    io.stderr(`error: cannot reach ${url.origin}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    io.stderr(`error: HTTP ${response.status} with a body that is not JSON\n`);
    return 1;
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    io.stderr(`error: HTTP ${response.status} ${String(error?.code ?? '')}: ${String(error?.message ?? text)}\n`);
    return 1;
  }
  io.stdout(`${JSON.stringify(body, null, 2)}\n`);
  return 0;
}
