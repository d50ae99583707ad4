// The dashboard's entry point: sign-in first, then a page per hash route (#/detect, #/baseline,
// #/machines, #/machines/<id>, #/usage, #/keys, #/webhooks). Plain DOM, no framework.
import { apiRequest, setUnauthorizedHandler } from './api.js';
import { currentSession, forgetSession, setSession, type SessionView } from './auth.js';
import { el } from './dom.js';
import { renderBaseline } from './pages/baseline.js';
import { renderDetect } from './pages/detect.js';
import { renderKeys } from './pages/keys.js';
import { renderMachine, renderMachines } from './pages/machines.js';
import { renderSignIn } from './pages/signin.js';
import { renderUsage } from './pages/usage.js';
import { renderWebhooks } from './pages/webhooks.js';

const PAGES = [
  { route: 'detect', title: 'Detect on a CSV' },
  { route: 'baseline', title: 'Create a baseline' },
  { route: 'machines', title: 'Machines' },
  { route: 'usage', title: 'Usage' },
  { route: 'keys', title: 'Keys' },
  { route: 'webhooks', title: 'Webhooks' },
] as const;

const root = document.getElementById('root') ?? document.body;

setUnauthorizedHandler(() => {
  forgetSession();
  renderSignIn(root, show, 'The session has ended (401). Sign in again.');
});

function show(): void {
  const session = currentSession();
  if (!session.signed_in) {
    renderSignIn(root, show);
    return;
  }
  const [route = 'detect', ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const signOutButton = el('button', { type: 'button', class: 'secondary', 'data-testid': 'sign-out' }, 'Sign out');
  signOutButton.addEventListener('click', () => {
    signOutButton.disabled = true;
    // The server ends the session whatever this tab does next; the page returns to sign-in either way.
    void apiRequest('POST', '/dashboard/api/logout', undefined, { handleUnauthorized: false })
      .catch(() => undefined)
      .then(() => {
        forgetSession();
        location.hash = '';
        renderSignIn(root, show);
      });
  });
  const main = el('main', { 'data-page': route });
  root.replaceChildren(
    el(
      'header',
      {},
      el('h1', {}, 'Anomaly detection'),
      el('nav', {}, ...PAGES.map((page) => el('a', { href: `#/${page.route}`, class: page.route === route ? 'active' : undefined }, page.title))),
      el('span', { class: 'who', 'data-testid': 'who' }, `Signed in as ${session.name ?? ''}`),
      signOutButton,
    ),
    main,
  );
  switch (route) {
    case 'baseline':
      renderBaseline(main);
      break;
    case 'machines':
      if (rest.length > 0) void renderMachine(main, decodeURIComponent(rest.join('/')));
      else void renderMachines(main);
      break;
    case 'usage':
      void renderUsage(main);
      break;
    case 'keys':
      void renderKeys(main);
      break;
    case 'webhooks':
      void renderWebhooks(main);
      break;
    default:
      renderDetect(main);
  }
}

window.addEventListener('hashchange', show);
// A session from before a reload (or from the identity provider's redirect) is the cookie's.
apiRequest<SessionView>('GET', '/dashboard/api/session', undefined, { handleUnauthorized: false })
  .then(setSession)
  .catch(() => undefined)
  .then(show);
