import { apiRequest, describeError, ApiError } from '../api.js';
import { currentSession, setSession, type SessionView } from '../auth.js';
import { el, errorBox } from '../dom.js';

/** Email and password (and the identity provider's button when the server offers it). */
export function renderSignIn(root: HTMLElement, onSignedIn: () => void, notice?: string): void {
  const email = el('input', { type: 'email', name: 'email', autocomplete: 'username', required: true });
  const password = el('input', { type: 'password', name: 'password', autocomplete: 'current-password', required: true });
  const button = el('button', { type: 'submit' }, 'Sign in');
  const message = el('div', {}, notice ? errorBox(notice) : null);
  const provider = currentSession().oidc
    ? el('p', {}, el('a', { href: '/dashboard/api/oidc/start', class: 'button secondary', 'data-testid': 'oidc-signin' }, 'Sign in with your identity provider'))
    : null;
  const form = el(
    'form',
    { class: 'card', 'data-testid': 'signin' },
    el('h2', {}, 'Sign in'),
    el('p', { class: 'notice' }, 'The first account is printed by npm start at the first start (and saved in data/bootstrap-account.json).'),
    el('label', {}, 'Email', email),
    el('label', {}, 'Password', password),
    el('p', {}, button),
    provider,
    message,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    button.disabled = true;
    apiRequest<SessionView>('POST', '/dashboard/api/login', { email: email.value.trim(), password: password.value }, { handleUnauthorized: false })
      .then((view) => {
        setSession(view);
        onSignedIn();
      })
      .catch((error: unknown) => {
        button.disabled = false;
        password.value = '';
        const text = error instanceof ApiError && error.code === 'InvalidCredentials' ? `Not signed in: ${error.message}` : `Not signed in: ${describeError(error)}`;
        message.replaceChildren(errorBox(text));
      });
  });
  root.replaceChildren(el('main', { class: 'signin' }, el('h1', {}, 'Anomaly detection'), form));
  email.focus();
}
