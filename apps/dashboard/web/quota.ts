// What the usage page says about the organization's plan and its monthly quota, as plain text so
// the wording is tested without a browser.
import type { UsageSummary } from './api-types.js';

export interface QuotaView {
  readonly plan: string;
  readonly used: string;
  readonly remaining: string;
  /** Null when the plan has no quota. */
  readonly renews: string | null;
  /** The progress bar's value and max (max > 0); null when the plan has no quota. */
  readonly bar: { readonly value: number; readonly max: number } | null;
}

type QuotaFields = Pick<UsageSummary, 'plan' | 'monthly_point_quota' | 'points_used_this_month' | 'points_remaining' | 'quota_renews_at'>;

const count = (value: number): string => value.toLocaleString('en-US');

export function quotaView(summary: QuotaFields): QuotaView {
  const used = summary.points_used_this_month;
  const quota = summary.monthly_point_quota;
  if (quota === null || summary.points_remaining === null || summary.quota_renews_at === null) {
    return {
      plan: summary.plan,
      used: `${count(used)} points this month (UTC)`,
      remaining: `Unlimited: the ${summary.plan} plan has no monthly quota.`,
      renews: null,
      bar: null,
    };
  }
  // A <progress> needs a positive max; a quota of 0 shows as full.
  const bar = quota === 0 ? { value: 1, max: 1 } : { value: Math.min(used, quota), max: quota };
  return {
    plan: summary.plan,
    used: `${count(used)} of ${count(quota)} points this month (UTC)`,
    remaining: `${count(summary.points_remaining)} points remaining`,
    renews: `${summary.quota_renews_at.slice(0, 10)} ${summary.quota_renews_at.slice(11, 16)} UTC`,
    bar,
  };
}
