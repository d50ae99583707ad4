import { describe, expect, it } from 'vitest';
import { STREAM_DEFAULTS } from '@adp/detection';
import { runCli } from '../src/cli.js';
import { MAX_BATCH_POINTS, defaultStreamWindow } from '../src/detect.js';
import { memoryIo } from './memory-io.js';
import { hourlyTimestamps, syntheticCsv, syntheticValues } from './synthetic.js';

const PERIOD = 12;
const POINTS = 96;
const SPIKE = 80;
const spiky = syntheticCsv({ points: POINTS, period: PERIOD, spikes: [SPIKE] });

const POINT_FIELDS = [
  'timestamp', 'value', 'expectedValue', 'upperMargin', 'lowerMargin',
  'isAnomaly', 'isPositiveAnomaly', 'isNegativeAnomaly', 'severity',
].sort();

async function run(argv: string[], files: Record<string, string> = { 'spiky.csv': spiky }) {
  const mem = memoryIo(files);
  const code = await runCli(argv, mem.io);
  return { code, ...mem };
}

function expectPointShape(line: Record<string, unknown>, extra: string[] = []) {
  expect(Object.keys(line).sort()).toEqual([...POINT_FIELDS, ...extra].sort());
  expect(typeof line.timestamp).toBe('string');
  for (const k of ['value', 'expectedValue', 'upperMargin', 'lowerMargin', 'severity']) {
    expect(Number.isFinite(line[k])).toBe(true);
  }
  for (const k of ['isAnomaly', 'isPositiveAnomaly', 'isNegativeAnomaly']) expect(typeof line[k]).toBe('boolean');
  expect(line.severity as number).toBeGreaterThanOrEqual(0);
  expect(line.severity as number).toBeLessThanOrEqual(1);
}

function anomalyIndexes(lines: Record<string, unknown>[]): number[] {
  return lines.flatMap((l, i) => (l.isAnomaly === true ? [i] : []));
}

describe('modes', () => {
  it('entire (the default): one line per point, in order, with the spike flagged upward', async () => {
    const r = await run(['spiky.csv', '--period', String(PERIOD)]);
    expect(r.stderr()).toBe('');
    expect(r.code).toBe(0);
    const lines = r.lines();
    expect(lines).toHaveLength(POINTS);
    lines.forEach((l) => expectPointShape(l));
    expect(lines[0]?.timestamp).toBe('2024-01-01T00:00:00.000Z');
    expect(lines[SPIKE]).toMatchObject({ isAnomaly: true, isPositiveAnomaly: true, isNegativeAnomaly: false });
    expect(lines[SPIKE]?.severity as number).toBeGreaterThan(0);
    expect(anomalyIndexes(lines).length).toBeLessThanOrEqual(Math.floor(POINTS * 0.25));
  });

  it('entire with the period detected flags the spike too', async () => {
    const r = await run(['spiky.csv']);
    expect(r.code).toBe(0);
    expect(r.lines()[SPIKE]?.isAnomaly).toBe(true);
  });

  it('last: one line, for the last point', async () => {
    const upToSpike = syntheticCsv({ points: SPIKE + 1, period: PERIOD, spikes: [SPIKE] });
    const r = await run(['up.csv', '--mode', 'last', '--period', String(PERIOD)], { 'up.csv': upToSpike });
    expect(r.code).toBe(0);
    const lines = r.lines();
    expect(lines).toHaveLength(1);
    expectPointShape(lines[0] as Record<string, unknown>);
    expect(lines[0]).toMatchObject({ timestamp: new Date(Date.UTC(2024, 0, 1, SPIKE)).toISOString(), isAnomaly: true, isPositiveAnomaly: true });

    const calm = await run(['spiky.csv', '--mode', 'last', '--period', String(PERIOD)]);
    expect(calm.lines()).toHaveLength(1);
    expect(calm.lines()[0]?.isAnomaly).toBe(false);
  });

  it('changepoint: the entire fields plus isChangePoint and confidenceScore, with the level shift found', async () => {
    const shifted = syntheticCsv({ points: 120, period: PERIOD, shiftAt: 60, shiftBy: 40 });
    const r = await run(['shift.csv', '--mode', 'changepoint', '--period', String(PERIOD)], { 'shift.csv': shifted });
    expect(r.stderr()).toBe('');
    expect(r.code).toBe(0);
    const lines = r.lines();
    expect(lines).toHaveLength(120);
    for (const l of lines) {
      expectPointShape(l, ['isChangePoint', 'confidenceScore']);
      expect(typeof l.isChangePoint).toBe('boolean');
      expect(l.confidenceScore as number).toBeGreaterThanOrEqual(0);
      expect(l.confidenceScore as number).toBeLessThanOrEqual(1);
    }
    const changes = lines.flatMap((l, i) => (l.isChangePoint === true ? [i] : []));
    expect(changes.some((i) => Math.abs(i - 60) <= 3)).toBe(true);
  });

  it('changepoint passes --threshold and --stable-trend-window to the engine', async () => {
    const shifted = syntheticCsv({ points: 120, period: PERIOD, shiftAt: 60, shiftBy: 40 });
    const files = { 'shift.csv': shifted };
    const count = async (extra: string[]) => {
      const r = await run(['shift.csv', '--mode', 'changepoint', '--period', String(PERIOD), ...extra], files);
      expect(r.stderr()).toBe('');
      return r.lines().filter((l) => l.isChangePoint === true).length;
    };
    expect(await count(['--threshold', '0.99'])).toBeLessThanOrEqual(await count(['--threshold', '0.01']));
    expect(await count(['--stable-trend-window', '5'])).toBeGreaterThanOrEqual(0);
  });

  it('stream: one line per point; early points are not anomalous; the spike is flagged', async () => {
    const r = await run(['spiky.csv', '--mode', 'stream', '--period', String(PERIOD)]);
    expect(r.stderr()).toBe('');
    expect(r.code).toBe(0);
    const lines = r.lines();
    expect(lines).toHaveLength(POINTS);
    lines.forEach((l) => expectPointShape(l));
    expect(lines.slice(0, 11).every((l) => l.isAnomaly === false)).toBe(true);
    expect(lines[SPIKE]).toMatchObject({ isAnomaly: true, isPositiveAnomaly: true });
    expect(lines.map((l) => l.timestamp)).toEqual(hourlyTimestamps(POINTS));
  });

  it('stream honours --window and --min-history', async () => {
    const r = await run(['spiky.csv', '--mode', 'stream', '--period', String(PERIOD), '--window', '40', '--min-history', '30']);
    expect(r.code).toBe(0);
    const lines = r.lines();
    expect(lines).toHaveLength(POINTS);
    // Points whose window holds fewer than 30 points are not judged: no margins, not anomalous.
    for (const l of lines.slice(0, 29)) expect(l).toMatchObject({ isAnomaly: false, upperMargin: 0, lowerMargin: 0, severity: 0 });
    expect(lines[29]?.upperMargin as number).toBeGreaterThan(0);
    expect(lines[SPIKE]?.isAnomaly).toBe(true);
  });

  it("stream judges with the streaming worker's window by default; --window suggested uses the suggested one", async () => {
    const lines = async (extra: string[]) => {
      const r = await run(['spiky.csv', '--mode', 'stream', ...extra]);
      expect(r.code, r.stderr()).toBe(0);
      return r.lines();
    };
    const byDefault = await lines([]);
    expect(byDefault).toEqual(await lines(['--window', String(STREAM_DEFAULTS.windowPoints)]));
    const suggested = await lines(['--window', 'suggested']);
    // 96 points with a 12-point period: the suggested window is 720 points (4 periods + 1 is 49), all the file.
    expect(suggested).toEqual(await lines(['--window', '720']));
    expect(suggested).not.toEqual(await lines(['--window', String(PERIOD * 4 + 1)]));
  });

  it('stream follows the suggested window by default, as the worker: a long period grows the window past 720 points', async () => {
    // A 240-point cycle over 2,400 points: 4 periods + 1 = 961 once two cycles are in the window.
    const long = syntheticCsv({ points: 2400, period: 240, spikes: [2000] });
    const lines = async (extra: string[]) => {
      const r = await run(['long.csv', '--mode', 'stream', ...extra], { 'long.csv': long });
      expect(r.code, r.stderr()).toBe(0);
      return r.lines();
    };
    const byDefault = await lines([]);
    expect(byDefault).toEqual(await lines(['--window', 'follow']));
    const fixed = await lines(['--window', '720']);
    // The same until the window first grows, different after.
    expect(byDefault.slice(0, 480)).toEqual(fixed.slice(0, 480));
    expect(byDefault.slice(1000)).not.toEqual(fixed.slice(1000));
    expect(byDefault[2000]).toMatchObject({ isAnomaly: true });
  });

  it("--window suggested is the service's suggested window (4 periods + 1, at least 720; 720 without a period)", () => {
    expect(defaultStreamWindow(24)).toBe(720);
    expect(defaultStreamWindow(2)).toBe(720);
    expect(defaultStreamWindow(288)).toBe(1153);
    expect(defaultStreamWindow(0)).toBe(720);
  });

  it('stream remembers 8,640 points by default: a level the series held before its window is not new', async () => {
    // Hourly noise around 100 that dips to about 90 (points 200 to 400), then drifts down from
    // point 1400 by 0.02 a point; windows of 500 points, the period fixed at none.
    const values = Array.from({ length: 2400 }, (_, i) => {
      const noise = ((Math.abs(Math.sin(i * 12.9898) * 43758.5453) % 1) - 0.5) * 3;
      if (i >= 200 && i < 300) return 100 + noise - 0.1 * (i - 200);
      if (i >= 300 && i < 400) return 90 + noise + 0.1 * (i - 300);
      return 100 + noise - (i >= 1400 ? 0.02 * (i - 1400) : 0);
    });
    const csv = ['timestamp,value', ...hourlyTimestamps(values.length).map((t, i) => `${t},${values[i]!.toFixed(4)}`)].join('\n');
    const flags = async (extra: string[]): Promise<number[]> => {
      const r = await run(['drift.csv', '--mode', 'stream', '--period', '0', '--window', '500', ...extra], { 'drift.csv': csv });
      expect(r.code, r.stderr()).toBe(0);
      return anomalyIndexes(r.lines()).filter((i) => i >= 1400);
    };
    const remembered = await flags([]);
    expect(await flags(['--memory', '8640'])).toEqual(remembered);
    const forgetful = await flags(['--memory', '0']);
    // Without the past the drift is new once it leaves the window's older range; with it, only
    // below the dip's lowest value, later.
    expect(forgetful.length).toBeGreaterThan(0);
    expect(remembered.length).toBeGreaterThan(0);
    expect(remembered[0]!).toBeGreaterThan(forgetful[0]! + 100);
    expect(values[remembered[0]!]!).toBeLessThan(Math.min(...values.slice(0, remembered[0]! - 499)));
  });

  describe('a repeated timestamp', () => {
    // The spiky file with the row after the spike repeating the spike's hour, at the clean value.
    const rows = spiky.split('\n');
    const spikeRow = rows[SPIKE + 1]!;
    const clean = syntheticValues({ points: POINTS, period: PERIOD })[SPIKE]!;
    const repeatedRow = `${spikeRow.split(',')[0]},${clean}`;
    const repeated = [...rows.slice(0, SPIKE + 2), repeatedRow, ...rows.slice(SPIKE + 2)].join('\n');
    const spikeLine = SPIKE + 2;
    const warning = `detect: warning: line ${spikeLine + 1}: repeated timestamp (same instant as line ${spikeLine}); kept line ${spikeLine + 1}'s value, dropped line ${spikeLine} (--strict refuses)\n`;

    for (const mode of ['entire', 'stream']) {
      it(`${mode}: warns with both lines on stderr and judges the later row in the earlier one's place`, async () => {
        const r = await run(['repeated.csv', '--mode', mode, '--period', String(PERIOD)], { 'repeated.csv': repeated });
        expect(r.code).toBe(0);
        expect(r.stderr()).toBe(warning);
        const lines = r.lines();
        expect(lines).toHaveLength(POINTS);
        expect(lines[SPIKE]).toMatchObject({ timestamp: spikeRow.split(',')[0], value: clean, isAnomaly: false });
        // The same as a file that had only the later row.
        const cleaned = [...rows.slice(0, SPIKE + 1), repeatedRow, ...rows.slice(SPIKE + 2)].join('\n');
        const control = await run(['clean.csv', '--mode', mode, '--period', String(PERIOD)], { 'clean.csv': cleaned });
        expect(r.stdout()).toBe(control.stdout());
      });

      it(`${mode} --strict: refuses the file with the repeated line, status 1`, async () => {
        const r = await run(['repeated.csv', '--mode', mode, '--strict'], { 'repeated.csv': repeated });
        expect(r.code).toBe(1);
        expect(r.stdout()).toBe('');
        expect(r.stderr()).toBe(`detect: line ${spikeLine + 1}: duplicate timestamp (same instant as line ${spikeLine}; refused by --strict)\n`);
      });
    }

    it('sums up the warnings after ten', async () => {
      const many = ['timestamp,value', ...hourlyTimestamps(30).flatMap((t, i) => (i < 12 ? [`${t},${i}`, `${t},${i + 1}`] : [`${t},${i}`]))].join('\n');
      const r = await run(['many.csv'], { 'many.csv': many });
      expect(r.code).toBe(0);
      const warnings = r.stderr().trimEnd().split('\n');
      expect(warnings).toHaveLength(11);
      expect(warnings[0]).toMatch(/^detect: warning: line 3: repeated timestamp \(same instant as line 2\)/);
      expect(warnings[10]).toBe('detect: warning: 2 more repeated timestamp(s), each handled the same way');
      expect(r.lines()).toHaveLength(30);
    });
  });

  it('stream rejects a --min-history larger than the window as a usage error', async () => {
    const r = await run(['spiky.csv', '--mode', 'stream', '--window', '30', '--min-history', '40']);
    expect(r.code).toBe(2);
    expect(r.stderr()).toMatch(/--min-history 40 is larger than the window \(30 points\)/);
  });

  it('rejects entire and changepoint over the API limit with a pointer to stream', async () => {
    const big = syntheticCsv({ points: MAX_BATCH_POINTS + 1, period: 24 });
    for (const mode of ['entire', 'changepoint']) {
      const r = await run(['big.csv', '--mode', mode], { 'big.csv': big });
      expect(r.code).toBe(1);
      expect(r.stdout()).toBe('');
      expect(r.stderr()).toMatch(new RegExp(`has ${MAX_BATCH_POINTS + 1} points; --mode ${mode} takes at most ${MAX_BATCH_POINTS}.*--mode stream`));
    }
  });

  it('prints help on stdout with status 0', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout()).toMatch(/^Usage: npm run detect/);
  });

  it('reports a data error with status 1 and nothing on stdout', async () => {
    const r = await run(['missing.csv']);
    expect(r.code).toBe(1);
    expect(r.stdout()).toBe('');
    expect(r.stderr()).toBe('detect: cannot read missing.csv: no such file\n');
  });
});
