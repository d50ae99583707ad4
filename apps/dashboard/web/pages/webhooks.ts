// The organization's webhook targets (/v1/webhooks): create one (its signing secret shown once),
// see each target's state (and why a disabled one stopped), send a test delivery, read the
// delivery log, re-enable or delete. Reference: docs/webhooks.md.
import { ApiError, apiRequest, describeError } from '../api.js';
import type { CreatedWebhook, DeliveryList, DeliveryView, WebhookList, WebhookView } from '../api-types.js';
import { el, errorBox } from '../dom.js';

const EVENTS = ['episode.opened', 'episode.closed', 'regime.changed'] as const;

function plainError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 'WebhookNotFound') return 'This webhook no longer exists in your organization. Reload the page.';
  }
  return describeError(error);
}

function when(timestamp: string | null): string {
  return timestamp === null ? '—' : timestamp.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC');
}

function secretPanel(created: CreatedWebhook, onDone: () => void): HTMLElement {
  const field = el('input', { type: 'text', readonly: true, value: created.secret, size: 60, 'aria-label': 'The signing secret', 'data-testid': 'webhook-secret' });
  field.addEventListener('focus', () => field.select());
  const done = el('button', { type: 'button', class: 'secondary' }, 'I have stored it');
  done.addEventListener('click', onDone);
  return el(
    'section',
    { class: 'card secret', 'data-testid': 'new-webhook' },
    el('h3', {}, 'Signing secret'),
    el('p', { class: 'warning' }, 'Store this secret in your receiver now: it is shown only this once. Deliveries are signed with it (Standard Webhooks).'),
    el('p', { class: 'inline' }, field),
    done,
  );
}

function deliveryTable(deliveries: readonly DeliveryView[]): HTMLElement {
  if (deliveries.length === 0) return el('p', { class: 'notice' }, 'No deliveries yet.');
  return el(
    'table',
    { 'data-testid': 'deliveries' },
    el('thead', {}, el('tr', {}, el('th', {}, 'created'), el('th', {}, 'event'), el('th', {}, 'status'), el('th', {}, 'attempts'), el('th', {}, 'last answer'), el('th', {}, 'latency ms'))),
    el(
      'tbody',
      {},
      ...deliveries.map((d) => {
        const last = d.attempts[d.attempts.length - 1];
        return el(
          'tr',
          { 'data-delivery-id': d.delivery_id },
          el('td', {}, when(d.created_at)),
          el('td', {}, d.event),
          el('td', { 'data-testid': 'delivery-status' }, d.status),
          el('td', { class: 'num' }, d.attempts.length),
          el('td', {}, last === undefined ? '—' : last.status_code === null ? (last.error ?? 'no answer') : `HTTP ${last.status_code}`),
          el('td', { class: 'num' }, last === undefined ? '—' : Math.round(last.latency_ms)),
        );
      }),
    ),
  );
}

export async function renderWebhooks(main: HTMLElement): Promise<void> {
  const secretArea = el('div', {});
  const messages = el('div', {});
  const list = el('div', {}, el('p', { class: 'notice' }, 'Loading…'));
  const log = el('div', {});

  const fail = (error: unknown): void => {
    messages.replaceChildren(errorBox(plainError(error)));
  };

  const reload = async (): Promise<void> => {
    try {
      const { webhooks } = await apiRequest<WebhookList>('GET', '/v1/webhooks');
      list.replaceChildren(table(webhooks));
    } catch (error) {
      list.replaceChildren(errorBox(plainError(error)));
    }
  };

  const showLog = async (target: WebhookView): Promise<void> => {
    try {
      const { deliveries } = await apiRequest<DeliveryList>('GET', `/v1/webhooks/${encodeURIComponent(target.webhook_id)}/deliveries?limit=50`);
      log.replaceChildren(el('section', { class: 'card' }, el('h3', {}, `Deliveries to ${target.url}`), el('div', { class: 'table-scroll' }, deliveryTable(deliveries))));
    } catch (error) {
      fail(error);
    }
  };

  function table(webhooks: readonly WebhookView[]): HTMLElement {
    if (webhooks.length === 0) return el('p', { class: 'notice' }, 'No webhooks yet.');
    return el(
      'table',
      { 'data-testid': 'webhooks' },
      el('thead', {}, el('tr', {}, el('th', {}, 'url'), el('th', {}, 'events'), el('th', {}, 'machines'), el('th', {}, 'state'), el('th', {}, ''))),
      el('tbody', {}, ...webhooks.map(row)),
    );
  }

  function row(target: WebhookView): HTMLElement {
    const id = encodeURIComponent(target.webhook_id);
    const test = el('button', { type: 'button', class: 'secondary' }, 'Send test');
    test.addEventListener('click', () => {
      test.disabled = true;
      messages.replaceChildren();
      apiRequest<DeliveryView>('POST', `/v1/webhooks/${id}/test`, {})
        .then((delivery) => {
          const attempt = delivery.attempts[0];
          const answer = attempt?.status_code === null || attempt === undefined ? (attempt?.error ?? 'no answer') : `HTTP ${attempt.status_code}`;
          messages.replaceChildren(el('p', { class: delivery.status === 'delivered' ? 'notice' : 'error', role: 'status', 'data-testid': 'test-result' }, `Test delivery ${delivery.status}: ${answer}.`));
          return showLog(target);
        }, fail)
        .finally(() => {
          test.disabled = false;
        });
    });
    const deliveries = el('button', { type: 'button', class: 'secondary' }, 'Deliveries');
    deliveries.addEventListener('click', () => void showLog(target));
    const toggle = el('button', { type: 'button', class: 'secondary', 'data-testid': 'toggle' }, target.enabled ? 'Disable' : 'Re-enable');
    toggle.addEventListener('click', () => {
      toggle.disabled = true;
      apiRequest<WebhookView>('PATCH', `/v1/webhooks/${id}`, { enabled: !target.enabled }).then(reload, (error: unknown) => {
        fail(error);
        toggle.disabled = false;
      });
    });
    const remove = el('button', { type: 'button', class: 'danger' }, 'Delete');
    remove.addEventListener('click', () => {
      remove.disabled = true;
      apiRequest<WebhookView>('DELETE', `/v1/webhooks/${id}`).then(reload, (error: unknown) => {
        fail(error);
        remove.disabled = false;
      });
    });
    const state = target.enabled ? 'enabled' : `disabled ${when(target.disabled_at)}: ${target.disabled_reason ?? ''}`;
    return el(
      'tr',
      { 'data-webhook-id': target.webhook_id, 'data-state': target.enabled ? 'enabled' : 'disabled' },
      el('td', {}, el('code', {}, target.url)),
      el('td', {}, target.events.join(', ')),
      el('td', {}, target.machine_ids === null ? 'all' : target.machine_ids.join(', ')),
      el('td', { 'data-testid': 'webhook-state' }, state),
      el('td', { class: 'actions' }, test, ' ', deliveries, ' ', toggle, ' ', remove),
    );
  }

  const url = el('input', { type: 'url', name: 'url', required: true, size: 40, placeholder: 'https://hooks.example.com/adp' });
  const boxes = EVENTS.map((event) => el('input', { type: 'checkbox', name: 'events', value: event, checked: event !== 'regime.changed' }));
  const machines = el('input', { type: 'text', name: 'machine_ids', size: 24, placeholder: 'all machines' });
  const severity = el('input', { type: 'number', name: 'min_severity', min: 0, max: 1, step: 0.05, value: 0, size: 5 });
  const create = el('button', { type: 'submit' }, 'Create webhook');
  const form = el(
    'form',
    { class: 'inline' },
    el('label', {}, 'URL', url),
    el('fieldset', { class: 'inline' }, ...EVENTS.map((event, i) => el('label', { class: 'inline' }, boxes[i]!, event))),
    el('label', {}, 'Machines (comma-separated)', machines),
    el('label', {}, 'Min severity', severity),
    create,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    create.disabled = true;
    messages.replaceChildren();
    const ids = machines.value
      .split(',')
      .map((id) => id.trim())
      .filter((id) => id !== '');
    apiRequest<CreatedWebhook>('POST', '/v1/webhooks', {
      url: url.value.trim(),
      events: boxes.filter((box) => box.checked).map((box) => box.value),
      ...(ids.length > 0 ? { machine_ids: ids } : {}),
      min_severity: Number(severity.value),
    })
      .then((created) => {
        url.value = '';
        secretArea.replaceChildren(secretPanel(created, () => secretArea.replaceChildren()));
        return reload();
      }, fail)
      .finally(() => {
        create.disabled = false;
      });
  });

  main.replaceChildren(
    el(
      'section',
      { class: 'card' },
      el('h2', {}, 'Webhooks'),
      el('p', { class: 'notice' }, 'Alerts when a machine’s episode opens and closes, signed per Standard Webhooks. A target that keeps failing is disabled; re-enable it here.'),
      form,
    ),
    secretArea,
    messages,
    el('section', { class: 'card' }, list),
    log,
  );
  await reload();
}
