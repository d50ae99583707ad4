// Feedback measured on a replay with a recurring pattern, on the embedded platform: a machine whose
// level surges to about 68 now and then (a cleaning cycle, say) gets an episode per surge. One
// piece of feedback marking the first surge not_anomaly silences the later ones, and a real fault
// (a drop) after it still reaches the receiver. A twin machine fed the same values without feedback
// is the control: its later surges still raise episodes. The counts are docs/webhooks.md's figures.
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorkerConfig } from '@adp/stream-worker';
import { loadConfig } from '../src/config.js';
import { openPlatform, type Platform } from '../src/platform.js';
import { API_KEY, constantEnergyModel, eventually, get, post } from './streaming-helpers.js';

const T0 = Date.UTC(2025, 5, 1);
const MINUTE = 60_000;
const iso = (i: number): string => new Date(T0 + i * MINUTE).toISOString();
// Irregular gaps (160 to 250 points), so the engine does not take the surges for a season.
const SURGES_BEFORE = [150, 380, 545, 790, 960, 1170];
const SURGES_AFTER = [1340, 1510, 1760, 1930, 2150];
const FAULT = 2330;

function value(i: number): number {
  const noise = ((i * 7919) % 13) / 26;
  const surge = [...SURGES_BEFORE, ...SURGES_AFTER].some((s) => i >= s && i < s + 3);
  if (surge) return 68 + noise;
  if (i >= FAULT && i < FAULT + 5) return 20 + noise;
  return 50 + 5 * Math.sin((2 * Math.PI * i) / 60) + noise;
}

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

describe('feedback silences a recurring false episode', () => {
  it('one not_anomaly feedback: surge episodes before and after, and the fault still alerts', async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'adp-feedback-'));
    cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
    const opened: { machine_id: string; started_at: string }[] = [];
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        const payload = JSON.parse(body) as { type: string; data: { machine_id: string; episode: { started_at: string } } };
        if (payload.type === 'episode.opened') opened.push({ machine_id: payload.data.machine_id, started_at: payload.data.episode.started_at });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanup.push(() => new Promise((resolve) => server.close(resolve)));
    const config = loadConfig({ DATA_DIR: dataDir, BOOTSTRAP_API_KEY: API_KEY, LOG_LEVEL: 'silent', WEBHOOK_ALLOW_PRIVATE: 'true' });
    const platform: Platform = await openPlatform(config, { model: constantEnergyModel(1), worker: loadWorkerConfig({ WORKER_EPISODE_QUIET_POINTS: '10' }) });
    cleanup.push(() => platform.close());
    const app = platform.app;
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
    expect((await post(app, '/v1/webhooks', { url, events: ['episode.opened'] })).statusCode).toBe(201);

    const MACHINES = ['press-4', 'press-5'];
    const send = async (from: number, to: number): Promise<void> => {
      for (const machine of MACHINES) {
        for (let start = from; start < to; start += 600) {
          const points = Array.from({ length: Math.min(600, to - start) }, (_, k) => ({ timestamp: iso(start + k), value: value(start + k) }));
          expect((await post(app, '/v1/telemetry', { machine_id: machine, points })).statusCode).toBe(202);
        }
      }
      for (const machine of MACHINES) {
        await eventually(async () => (await get(app, `/v1/status/${machine}`)).json<{ telemetry?: { points: number } | null }>().telemetry?.points === to);
      }
    };
    const minuteOf = (o: { started_at: string }): number => (Date.parse(o.started_at) - T0) / MINUTE;
    const of = (machine: string) => opened.filter((o) => o.machine_id === machine);
    const episodesAt = (machine: string, starts: readonly number[]): number =>
      of(machine).filter((o) => starts.some((s) => minuteOf(o) >= s && minuteOf(o) < s + 3)).length;
    /** Episodes of a phase [from, to) that are not the fault's: false alarms. */
    const falseEpisodes = (machine: string, from: number, to: number): number =>
      of(machine).filter((o) => minuteOf(o) >= from && minuteOf(o) < to && !(minuteOf(o) >= FAULT && minuteOf(o) < FAULT + 5)).length;

    await send(0, 1200);
    for (const machine of MACHINES) await eventually(async () => episodesAt(machine, SURGES_BEFORE) === SURGES_BEFORE.length, 60_000);

    const feedback = await post(app, '/v1/machines/press-4/feedback', { from: iso(SURGES_BEFORE[0]!), to: iso(SURGES_BEFORE[0]! + 3), label: 'not_anomaly' });
    expect(feedback.statusCode, feedback.body).toBe(201);
    expect(feedback.json()).toMatchObject({ label: 'not_anomaly', pattern: { direction: 'up' } });

    await send(1200, 2400);
    for (const machine of MACHINES) await eventually(async () => episodesAt(machine, [FAULT]) === 1, 60_000);
    // The control's deliveries may still be in flight (4 at a time per target, in any order).
    await eventually(async () => falseEpisodes('press-5', 1200, 2400) >= SURGES_AFTER.length, 60_000);
    const figures = Object.fromEntries(
      MACHINES.map((machine) => [machine, { falseBefore: falseEpisodes(machine, 0, 1200), falseAfter: falseEpisodes(machine, 1200, 2400), fault: episodesAt(machine, [FAULT]) }]),
    );
    // Every surge before the feedback was an episode on both machines; after it, none on press-4
    // while its twin without feedback still gets one per surge; the fault alerts on both.
    expect(figures).toEqual({
      'press-4': { falseBefore: SURGES_BEFORE.length, falseAfter: 0, fault: 1 },
      'press-5': { falseBefore: SURGES_BEFORE.length, falseAfter: SURGES_AFTER.length, fault: 1 },
    });
    expect((await get(app, '/v1/machines/press-4/feedback')).json<{ feedback: unknown[] }>().feedback).toHaveLength(1);
    const actions = (await get(app, '/v1/audit')).json<{ events: { action: string; target: string }[] }>().events;
    expect(actions).toContainEqual(expect.objectContaining({ action: 'feedback.created', target: 'machine:press-4' }));
  });
});
