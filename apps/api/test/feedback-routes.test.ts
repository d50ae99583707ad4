// /v1/machines/{id}/feedback through inject: the pattern taken from the stored results of the
// span, per organization, listed and removed, audited; a coded error for each bad input.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { ResultRow, ResultStore } from '@adp/streaming';
import { createMemoryResultStore } from '@adp/store';
import { DEFAULT_ORGANIZATION_ID } from '@adp/store';
import { OTHER_KEY, get, post, streamingEnvironment, type StreamingEnvironment } from './streaming-helpers.js';

const T0 = Date.parse('2025-06-01T10:00:00.000Z');
const MINUTE = 60_000;

function row(i: number, value: number, flagged: boolean): ResultRow {
  return {
    orgId: DEFAULT_ORGANIZATION_ID,
    machineId: 'press-4',
    tsMs: T0 + i * MINUTE,
    value,
    expectedValue: 50,
    upperMargin: 2,
    lowerMargin: 2,
    isAnomaly: flagged,
    isPositiveAnomaly: flagged && value > 50,
    isNegativeAnomaly: flagged && value < 50,
    severity: flagged ? 0.7 : 0,
    energy: null,
    zScore: null,
    regime: 'UNKNOWN',
    modelVersion: 'engine-test',
    writtenAtMs: T0,
  };
}

describe('/v1/machines/{id}/feedback', () => {
  let env: StreamingEnvironment;
  let app: FastifyInstance;
  let results: ResultStore;

  beforeEach(async () => {
    env = await streamingEnvironment();
    results = createMemoryResultStore();
    await results.insert([row(0, 50.5, false), row(1, 67.5, true), row(2, 69, true), row(3, 50, false)]);
    app = await env.start({}, { results });
  });
  afterEach(async () => {
    await env.cleanup();
  });

  it('takes the pattern of the span from its stored flagged points, lists it, deletes it, audited, per organization', async () => {
    const created = await post(app, '/v1/machines/press-4/feedback', { from: '2025-06-01T10:00:00Z', to: '2025-06-01T10:04:00Z', label: 'not_anomaly' });
    expect(created.statusCode).toBe(201);
    const body = created.json<{ feedback_id: string }>();
    expect(body).toEqual({
      feedback_id: expect.stringMatching(/^fb_[0-9a-f]{24}$/),
      machine_id: 'press-4',
      from: '2025-06-01T10:00:00.000Z',
      to: '2025-06-01T10:04:00.000Z',
      label: 'not_anomaly',
      pattern: { low: 67.5, high: 69, direction: 'up', points: 2 },
      created_at: expect.any(String),
    });
    const empty = await post(app, '/v1/machines/press-4/feedback', { from: '2025-06-02T10:00:00Z', to: '2025-06-02T11:00:00Z', label: 'anomaly' });
    expect(empty.json()).toMatchObject({ label: 'anomaly', pattern: null });
    expect((await get(app, '/v1/machines/press-4/feedback')).json<{ feedback: unknown[] }>().feedback).toHaveLength(2);
    await env.addOtherOrganization();
    expect((await get(app, '/v1/machines/press-4/feedback', OTHER_KEY)).json()).toEqual({ feedback: [] });

    const removed = await app.inject({ method: 'DELETE', url: `/v1/machines/press-4/feedback/${body.feedback_id}`, headers: { 'x-service-key': 'svc_test_streaming0123456789ab' } });
    expect(removed.statusCode).toBe(200);
    expect((await get(app, '/v1/machines/press-4/feedback')).json<{ feedback: unknown[] }>().feedback).toHaveLength(1);
    const again = await app.inject({ method: 'DELETE', url: `/v1/machines/press-4/feedback/${body.feedback_id}`, headers: { 'x-service-key': 'svc_test_streaming0123456789ab' } });
    expect(again.statusCode).toBe(404);
    expect(again.json()).toMatchObject({ error: { code: 'FeedbackNotFound' } });
    const actions = (await get(app, '/v1/audit')).json<{ events: { action: string }[] }>().events.map((e) => e.action);
    expect(actions.filter((a) => a.startsWith('feedback.'))).toEqual(['feedback.deleted', 'feedback.created', 'feedback.created']);
  });

  it('answers a coded 400 for each bad input', async () => {
    const cases: [string, unknown, string][] = [
      ['press-4', { from: 'yesterday', to: '2025-06-01T10:04:00Z', label: 'not_anomaly' }, 'InvalidFeedback'],
      ['press-4', { from: '2025-06-01T10:04:00Z', to: '2025-06-01T10:00:00Z', label: 'not_anomaly' }, 'InvalidFeedback'],
      ['press-4', { from: '2025-06-01T10:00:00Z', to: '2025-06-01T10:04:00Z', label: 'maybe' }, 'InvalidFeedback'],
      ['-bad', { from: '2025-06-01T10:00:00Z', to: '2025-06-01T10:04:00Z', label: 'anomaly' }, 'InvalidMachineId'],
      ['press-4', { from: '2025-06-01T10:00:00Z', label: 'anomaly' }, 'BadRequest'],
    ];
    for (const [machine, body, code] of cases) {
      const response = await post(app, `/v1/machines/${machine}/feedback`, body);
      expect(response.statusCode, JSON.stringify(body)).toBe(400);
      expect(response.json(), JSON.stringify(body)).toMatchObject({ error: { code } });
    }
  });
});
