// The organization's API keys: list, create, rotate, revoke (/v1/keys). A new key's secret is
// shown once, in a read-only field with a copy button; the API keeps only its hash.
import { ApiError, apiRequest, describeError } from '../api.js';
import type { IssuedKey, KeyList, KeyView, RotatedKey } from '../api-types.js';
import { el, errorBox } from '../dom.js';

/** The rotate form's default grace period, as the API's own default: one hour. */
const DEFAULT_GRACE_SECONDS = 3600;

/** The API's key-management refusals in plain words; any other error keeps the API's message. */
function plainError(error: unknown): string {
  if (error instanceof ApiError) {
    switch (error.code) {
      case 'LastLiveKey':
        return "This is the organization's last live key that does not expire, so it cannot be revoked: create another live key first, then revoke this one.";
      case 'KeyNotActive':
        return 'Only an active key can be rotated: this one is revoked, expired or already rotated.';
      case 'KeyNotFound':
        return 'This key no longer exists in your organization. Reload the page.';
      case 'KeyManagementForbidden':
        return 'You are not allowed to manage keys.';
    }
  }
  return describeError(error);
}

function when(timestamp: string | null): string {
  return timestamp === null ? '—' : timestamp.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}

function state(key: KeyView): string {
  if (key.revoked_at !== null) return `revoked ${when(key.revoked_at)}`;
  if (key.expires_at !== null) return Date.parse(key.expires_at) <= Date.now() ? `expired ${when(key.expires_at)}` : `active until ${when(key.expires_at)}`;
  return 'active';
}

/** The one showing of a new key's secret: copy to the clipboard, or select the field to copy by hand. */
function secretPanel(issued: IssuedKey, heading: string, onDone: () => void): HTMLElement {
  const field = el('input', { type: 'text', readonly: true, value: issued.key, size: 60, 'aria-label': 'The new key', 'data-testid': 'key-secret' });
  const copied = el('span', { class: 'notice', role: 'status', 'data-testid': 'copy-status' });
  const copy = el('button', { type: 'button', 'data-testid': 'copy-key' }, 'Copy');
  copy.addEventListener('click', () => {
    // The clipboard API needs a secure context and permission; without it, the selected field is copied by hand.
    const byHand = (): void => {
      field.focus();
      field.select();
      copied.textContent = 'Selected: press Ctrl+C (⌘C) to copy.';
    };
    if (navigator.clipboard === undefined) {
      byHand();
      return;
    }
    navigator.clipboard.writeText(issued.key).then(() => {
      copied.textContent = 'Copied.';
    }, byHand);
  });
  const done = el('button', { type: 'button', class: 'secondary' }, 'I have stored it');
  done.addEventListener('click', onDone);
  field.addEventListener('focus', () => field.select());
  return el(
    'section',
    { class: 'card secret', 'data-testid': 'new-key', 'data-key-id': issued.key_id },
    el('h3', {}, heading),
    el('p', { class: 'warning' }, 'Store this key now: it is shown only this once and cannot be shown again.'),
    el('p', { class: 'inline' }, field, copy, copied),
    el('p', { class: 'notice' }, `${issued.kind} key ${issued.prefix}…${issued.last4}${issued.name === '' ? '' : ` (“${issued.name}”)`}`),
    done,
  );
}

export async function renderKeys(main: HTMLElement): Promise<void> {
  const secretArea = el('div', {});
  const messages = el('div', {});
  const list = el('div', {}, el('p', { class: 'notice' }, 'Loading…'));

  const fail = (error: unknown): void => {
    messages.replaceChildren(errorBox(plainError(error)));
  };

  const reload = async (): Promise<void> => {
    try {
      const { keys } = await apiRequest<KeyList>('GET', '/v1/keys');
      list.replaceChildren(keyTable(keys));
    } catch (error) {
      list.replaceChildren(errorBox(plainError(error)));
    }
  };

  const showSecret = (issued: IssuedKey, heading: string): void => {
    secretArea.replaceChildren(secretPanel(issued, heading, () => secretArea.replaceChildren()));
  };

  function keyTable(keys: readonly KeyView[]): HTMLElement {
    if (keys.length === 0) return el('p', { class: 'notice' }, 'No keys yet.');
    return el(
      'table',
      { 'data-testid': 'keys' },
      el(
        'thead',
        {},
        el('tr', {}, el('th', {}, 'name'), el('th', {}, 'kind'), el('th', {}, 'key'), el('th', {}, 'created'), el('th', {}, 'last used'), el('th', {}, 'state'), el('th', {}, '')),
      ),
      el('tbody', {}, ...keys.map(keyRow)),
    );
  }

  function keyRow(key: KeyView): HTMLElement {
    const actions = el('td', { class: 'actions' });
    const row = el(
      'tr',
      { 'data-key-id': key.key_id, 'data-state': key.revoked_at === null ? 'active' : 'revoked' },
      el('td', {}, key.name === '' ? '—' : key.name),
      el('td', {}, key.kind),
      el('td', {}, el('code', {}, `${key.prefix}…`)),
      el('td', {}, when(key.created_at)),
      el('td', {}, when(key.last_used_at)),
      el('td', { 'data-testid': 'key-state' }, state(key)),
      actions,
    );
    const usable = key.revoked_at === null && (key.expires_at === null || Date.parse(key.expires_at) > Date.now());
    if (!usable) return row;

    const idle = (): void => {
      const rotate = el('button', { type: 'button', class: 'secondary' }, 'Rotate');
      const revoke = el('button', { type: 'button', class: 'secondary' }, 'Revoke');
      rotate.addEventListener('click', confirmRotate);
      revoke.addEventListener('click', confirmRevoke);
      // A key already rotated (it expires) has its successor: only revoking it early is left.
      actions.replaceChildren(...(key.expires_at === null ? [rotate, ' '] : []), revoke);
    };

    const confirmRevoke = (): void => {
      const yes = el('button', { type: 'button', class: 'danger' }, 'Confirm revoke');
      const no = el('button', { type: 'button', class: 'secondary' }, 'Cancel');
      no.addEventListener('click', idle);
      yes.addEventListener('click', () => {
        yes.disabled = true;
        messages.replaceChildren();
        apiRequest<KeyView>('DELETE', `/v1/keys/${encodeURIComponent(key.key_id)}`).then(reload, (error: unknown) => {
          fail(error);
          idle();
        });
      });
      actions.replaceChildren(el('span', {}, 'Revoke it now? Calls with it will be refused at once. '), yes, ' ', no);
    };

    const confirmRotate = (): void => {
      const grace = el('input', { type: 'number', min: 0, max: 30 * 24 * 3600, step: 1, value: DEFAULT_GRACE_SECONDS, 'aria-label': 'Grace seconds', size: 8 });
      const yes = el('button', { type: 'button' }, 'Confirm rotate');
      const no = el('button', { type: 'button', class: 'secondary' }, 'Cancel');
      no.addEventListener('click', idle);
      yes.addEventListener('click', () => {
        const graceSeconds = Number(grace.value);
        if (!Number.isInteger(graceSeconds) || graceSeconds < 0) {
          messages.replaceChildren(errorBox('The grace period is a whole number of seconds, 0 or more.'));
          return;
        }
        yes.disabled = true;
        messages.replaceChildren();
        apiRequest<RotatedKey>('POST', `/v1/keys/${encodeURIComponent(key.key_id)}/rotate`, { grace_seconds: graceSeconds }).then(
          (rotated) => {
            showSecret(rotated, 'The successor key');
            return reload();
          },
          (error: unknown) => {
            fail(error);
            idle();
          },
        );
      });
      actions.replaceChildren(el('label', { class: 'inline' }, 'The old key works for (seconds)', grace), ' ', yes, ' ', no);
    };

    idle();
    return row;
  }

  const kind = el('select', { name: 'kind' }, el('option', { value: 'live' }, 'live'), el('option', { value: 'test' }, 'test'));
  const name = el('input', { type: 'text', name: 'name', maxlength: 200, placeholder: 'what it is for' });
  const create = el('button', { type: 'submit' }, 'Create key');
  const form = el('form', { class: 'inline' }, el('label', {}, 'Kind', kind), el('label', {}, 'Name', name), create);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    create.disabled = true;
    messages.replaceChildren();
    apiRequest<IssuedKey>('POST', '/v1/keys', { kind: kind.value === 'test' ? 'test' : 'live', name: name.value.trim() })
      .then(
        (issued) => {
          name.value = '';
          showSecret(issued, 'Your new key');
          return reload();
        },
        fail,
      )
      .finally(() => {
        create.disabled = false;
      });
  });

  main.replaceChildren(
    el(
      'section',
      { class: 'card' },
      el('h2', {}, 'Keys'),
      el('p', { class: 'notice' }, "Your organization's API keys (test keys cannot manage keys). A key's secret is shown once, when it is created or rotated."),
      form,
    ),
    secretArea,
    messages,
    el('section', { class: 'card' }, list),
  );
  await reload();
}
