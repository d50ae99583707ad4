import { apiRequest, describeError } from '../api.js';
import { signIn, signOut } from '../auth.js';
import { el, errorBox } from '../dom.js';
import type { UsageRecord } from '../api-types.js';

/** Asks for an API key and keeps it only once the service has accepted it. */
export function renderSignIn(root: HTMLElement, onSignedIn: () => void, notice?: string): void {
  const input = el('input', { type: 'password', name: 'key', autocomplete: 'off', placeholder: 'svc_live_… or svc_test_…', required: true });
  const button = el('button', { type: 'submit' }, 'Sign in');
  const message = el('div', {}, notice ? errorBox(notice) : null);
  const form = el(
    'form',
    { class: 'card', 'data-testid': 'signin' },
    el('h2', {}, 'Sign in'),
    el('p', { class: 'notice' }, 'Paste an API key of your organization (npm start prints one at the first start). It is kept for this browser tab only.'),
    el('label', {}, 'API key', input),
    el('p', {}, button),
    message,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (key === '') return;
    button.disabled = true;
    signIn(key);
    apiRequest<UsageRecord[]>('GET', '/v1/usage', undefined, { handleUnauthorized: false })
      .then(() => onSignedIn())
      .catch((error: unknown) => {
        signOut();
        button.disabled = false;
        message.replaceChildren(errorBox(`The key was not accepted: ${describeError(error)}`));
      });
  });
  root.replaceChildren(el('main', { class: 'signin' }, el('h1', {}, 'Anomaly detection'), form));
  input.focus();
}
