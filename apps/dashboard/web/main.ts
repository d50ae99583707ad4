// The dashboard's entry point: sign-in first, then a page per hash route (#/detect, #/baseline,
// #/machines, #/machines/<id>, #/usage). Plain DOM, no framework.
import { setUnauthorizedHandler } from './api.js';
import { currentKey, maskedKey, signOut } from './auth.js';
import { el } from './dom.js';
import { renderBaseline } from './pages/baseline.js';
import { renderDetect } from './pages/detect.js';
import { renderMachine, renderMachines } from './pages/machines.js';
import { renderSignIn } from './pages/signin.js';
import { renderUsage } from './pages/usage.js';

const PAGES = [
  { route: 'detect', title: 'Detect on a CSV' },
  { route: 'baseline', title: 'Create a baseline' },
  { route: 'machines', title: 'Machines' },
  { route: 'usage', title: 'Usage' },
] as const;

const root = document.getElementById('root') ?? document.body;

setUnauthorizedHandler(() => {
  signOut();
  renderSignIn(root, show, 'The service refused the key (401). Sign in again.');
});

function show(): void {
  const key = currentKey();
  if (key === null) {
    renderSignIn(root, show);
    return;
  }
  const [route = 'detect', ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const signOutButton = el('button', { type: 'button', class: 'secondary', 'data-testid': 'sign-out' }, 'Sign out');
  signOutButton.addEventListener('click', () => {
    signOut();
    location.hash = '';
    renderSignIn(root, show);
  });
  const main = el('main', { 'data-page': route });
  root.replaceChildren(
    el(
      'header',
      {},
      el('h1', {}, 'Anomaly detection'),
      el('nav', {}, ...PAGES.map((page) => el('a', { href: `#/${page.route}`, class: page.route === route ? 'active' : undefined }, page.title))),
      el('span', { class: 'who', 'data-testid': 'who' }, `Signed in with ${maskedKey(key)}`),
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
    default:
      renderDetect(main);
  }
}

window.addEventListener('hashchange', show);
show();
