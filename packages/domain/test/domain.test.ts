import { describe, expect, it } from 'vitest';
import {
  CHANNEL_NAME_PATTERN,
  DEFAULT_JOB_MAX_POINTS,
  DEFAULT_MAX_ANOMALY_RATIO,
  DEFAULT_SENSITIVITY,
  MACHINE_ID_BODY,
  MACHINE_ID_MAX_LENGTH,
  MACHINE_ID_PATTERN,
  MACHINE_ID_RULE,
  MAX_MULTIVARIATE_CHANNELS,
  MAX_SERIES_POINTS,
  MAX_TELEMETRY_CHANNELS,
  MAX_VALUE_MAGNITUDE,
  MIN_BASELINE_POINTS,
  MIN_SERIES_POINTS,
  TELEMETRY_MACHINE_ID_PATTERN,
} from '../src/index.js';

/** An HTML `pattern` as a browser compiles it: the whole value, under the `v` flag. */
function browserPattern(pattern: string): RegExp {
  return new RegExp(`^(?:${pattern})$`, 'v');
}

describe('domain constants', () => {
  it('are the documented defaults and limits', () => {
    expect(DEFAULT_SENSITIVITY).toBe(95);
    expect(DEFAULT_MAX_ANOMALY_RATIO).toBe(0.25);
    expect([MIN_SERIES_POINTS, MAX_SERIES_POINTS, MIN_BASELINE_POINTS]).toEqual([12, 8640, 100]);
    expect(MAX_VALUE_MAGNITUDE).toBe(1e100);
    expect([MAX_MULTIVARIATE_CHANNELS, MAX_TELEMETRY_CHANNELS]).toEqual([16, 64]);
    expect(DEFAULT_JOB_MAX_POINTS).toBe(1_000_000);
    expect(MACHINE_ID_MAX_LENGTH).toBe(128);
    expect(MACHINE_ID_RULE).toBe('1 to 128 characters from A-Z a-z 0-9 . _ : - starting with a letter or digit');
  });

  it('takes machine ids of 1 to 128 characters from A-Z a-z 0-9 . _ : - starting with a letter or digit', () => {
    for (const id of ['p', 'pump-18', 'Line_2.press:temp', '9', `a${'-'.repeat(127)}`]) expect(MACHINE_ID_PATTERN.test(id), id).toBe(true);
    for (const id of ['', '-pump', '.p', 'pump 18', 'pümp', 'a/b', `a${'b'.repeat(128)}`, 'p\n']) expect(MACHINE_ID_PATTERN.test(id), id).toBe(false);
    expect(TELEMETRY_MACHINE_ID_PATTERN.test('pump-18.a_b')).toBe(true);
    expect(TELEMETRY_MACHINE_ID_PATTERN.test('pump:temp')).toBe(false);
  });

  it('takes channel names with a letter or _ first, up to 64 characters', () => {
    for (const name of ['temp', '_x', 'vibration.x:rms-1', `t${'x'.repeat(63)}`]) expect(CHANNEL_NAME_PATTERN.test(name), name).toBe(true);
    for (const name of ['', '0', '9rpm', '-a', `t${'x'.repeat(64)}`]) expect(CHANNEL_NAME_PATTERN.test(name), name).toBe(false);
  });

  it("gives the dashboard a machine-id pattern that browsers compile (v flag) and that decides as the API's does", () => {
    const html = browserPattern(MACHINE_ID_BODY);
    for (const id of ['pump-18', 'a:b.c_d', '-pump', '', 'a b', `a${'b'.repeat(127)}`, `a${'b'.repeat(128)}`]) {
      expect(html.test(id), id).toBe(MACHINE_ID_PATTERN.test(id));
    }
    // Every pattern also compiles as a JSON Schema `pattern` (ajv compiles with the u flag).
    for (const pattern of [MACHINE_ID_PATTERN, TELEMETRY_MACHINE_ID_PATTERN, CHANNEL_NAME_PATTERN]) {
      expect(() => new RegExp(pattern.source, 'u')).not.toThrow();
      expect(() => new RegExp(pattern.source, 'v')).not.toThrow();
    }
  });
});
