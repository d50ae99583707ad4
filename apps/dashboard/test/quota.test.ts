import { describe, expect, it } from 'vitest';
import { quotaView } from '../web/quota.js';

const free = { plan: 'free', monthly_point_quota: 10_000, quota_renews_at: '2026-12-01T00:00:00.000Z' } as const;

describe('quotaView', () => {
  it('a free plan: used of quota, what remains, the renewal and a bar', () => {
    expect(quotaView({ ...free, points_used_this_month: 1_540, points_remaining: 8_460 })).toEqual({
      plan: 'free',
      used: '1,540 of 10,000 points this month (UTC)',
      remaining: '8,460 points remaining',
      renews: '2026-12-01 00:00 UTC',
      bar: { value: 1_540, max: 10_000 },
    });
  });

  it('a free plan over its quota: 0 remaining and a full bar, not an overflowing one', () => {
    const view = quotaView({ ...free, points_used_this_month: 10_020, points_remaining: 0 });
    expect(view.remaining).toBe('0 points remaining');
    expect(view.bar).toEqual({ value: 10_000, max: 10_000 });
  });

  it('a quota of 0 shows a full bar (a progress bar needs a positive max)', () => {
    expect(quotaView({ ...free, monthly_point_quota: 0, points_used_this_month: 0, points_remaining: 0 }).bar).toEqual({ value: 1, max: 1 });
  });

  it('a paid plan: unlimited, no renewal, no bar', () => {
    expect(
      quotaView({ plan: 'paid', monthly_point_quota: null, points_used_this_month: 2_000, points_remaining: null, quota_renews_at: null }),
    ).toEqual({ plan: 'paid', used: '2,000 points this month (UTC)', remaining: 'Unlimited: the paid plan has no monthly quota.', renews: null, bar: null });
  });
});
