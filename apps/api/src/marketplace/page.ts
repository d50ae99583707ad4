// The landing page's HTML: small, self-contained (no scripts, fonts or images), every value
// escaped. It is the only answer a subscriber arriving from the marketplace sees, errors included.
import type { Organization } from '@adp/store';
import type { IssuedKeyView } from '../tenancy/key-management.js';

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STYLE =
  'body{font-family:system-ui,sans-serif;max-width:42rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1b1f24}' +
  'code,pre{font-family:ui-monospace,monospace;background:#f2f4f7;padding:.1rem .3rem;border-radius:3px}' +
  'pre{padding:.75rem;overflow-x:auto}.key{font-size:1.05rem;word-break:break-all}.note{color:#57606a}';

function page(title: string, body: string): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width,initial-scale=1">' +
    `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>` +
    `<body><h1>${escapeHtml(title)}</h1>${body}</body></html>`
  );
}

/** First visit: the organization and its live key, shown this once. */
export function welcomePage(organization: Organization, key: IssuedKeyView): string {
  const secret = escapeHtml(key.key);
  return page(
    'Your subscription is ready',
    `<p>We created the organization <code>${escapeHtml(organization.id)}</code> for your subscription, on the paid plan.</p>` +
      '<p><strong>Your live API key, shown only this once. Copy it now and keep it secret:</strong></p>' +
      `<pre class="key">${secret}</pre>` +
      '<h2>Next steps</h2><ol>' +
      '<li>Send it in the <code>X-Service-Key</code> header (or <code>Ocp-Apim-Subscription-Key</code> on the <code>/anomalydetector/</code> routes):' +
      `<pre>curl -s https://&lt;this host&gt;/v1/usage/summary -H 'X-Service-Key: ${secret}'</pre></li>` +
      '<li>Create a test key for development (its calls are never billed) with <code>POST /v1/keys</code> <code>{"kind":"test"}</code>; manage and rotate keys with <code>/v1/keys</code>.</li>' +
      '<li>Open the dashboard at <code>/dashboard/</code>.</li></ol>' +
      '<p class="note">Live calls are metered hourly and billed through the marketplace.</p>',
  );
}

/** A later visit: the organization exists and its keys were shown before. */
export function existingPage(organization: Organization): string {
  return page(
    'Your subscription is already set up',
    `<p>Your organization is <code>${escapeHtml(organization.id)}</code>. Its first live key was shown on your first visit and is not shown again.</p>` +
      '<p>Manage your keys with <code>/v1/keys</code> using any live key: create one (<code>POST /v1/keys</code>), rotate or revoke one. ' +
      'If you have lost every live key, contact support with your organization id.</p>',
  );
}

/** Any refusal or failure: a title and one explanatory paragraph (plain text, escaped here). */
export function problemPage(title: string, explanation: string): string {
  return page(title, `<p>${escapeHtml(explanation)}</p>`);
}
