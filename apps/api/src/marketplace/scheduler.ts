// The automatic hourly metering export. A few minutes after each UTC hour ends (the delay lets
// calls in flight at the boundary be counted), one replica, under a lease, exports every finished
// hour that is not settled yet, oldest first, as far back as the marketplace still takes records.
// Hours it can no longer report (out of the window, or failing run after run) are logged and
// counted on the `adp.marketplace.metering.unreported_hours` metric, each once per process.
//
// The acceptance window, from BatchMeterUsage's reference (AWS SDK for JavaScript v3,
// @aws-sdk/client-marketplace-metering, BatchMeterUsageCommand): "Usage records aren't accepted
// 24 hours or more after an event", and records of a month only until 06:00 UTC on the first day
// of the next month (the 6-hour grace period at the end of a billing cycle).
import type { FastifyBaseLogger } from 'fastify';
import { HOUR_MS, METERING_DIMENSIONS, type LedgerEntry, type Organization } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { exportHour, formatHour, isMarketplaceOrganization, monitoredMachines, type MeteringExportOptions } from './export.js';
import type { ExportLease } from './lease.js';
import type { MarketplaceMetrics, UnreportedReason } from './metrics.js';

export const ACCEPTANCE_WINDOW_MS = 24 * HOUR_MS;
export const MONTH_END_GRACE_MS = 6 * HOUR_MS;
/** Kept from the window's end: a record sent right at the edge could arrive after it. */
export const WINDOW_MARGIN_MS = 10 * 60_000;
/** How far back hours that were never reported are looked for (and flagged). */
export const MISSED_LOOKBACK_MS = 7 * 24 * HOUR_MS;
/** How long one run may hold the lease; a longer run may overlap another, which stays safe (see export.ts). */
export const LEASE_TTL_MS = 15 * 60_000;
/** Wait before the next try after a run that left something open or lost the lease race. */
export const RETRY_MS = 5 * 60_000;
/** How often the timer checks whether a run is due. */
export const POLL_MS = 60_000;
/** Runs an hour may stay open before it is flagged as failing. */
export const FAILING_AFTER_RUNS = 3;

/** The last moment (epoch ms, exclusive) the marketplace takes a record timestamped `hourMs`. */
export function acceptedUntil(hourMs: number): number {
  const start = new Date(hourMs);
  const nextMonth = Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1);
  return Math.min(hourMs + ACCEPTANCE_WINDOW_MS, nextMonth + MONTH_END_GRACE_MS);
}

/** Whether a record of the hour may still be sent at `nowMs` (with the margin). */
export function withinWindow(hourMs: number, nowMs: number): boolean {
  return nowMs < acceptedUntil(hourMs) - WINDOW_MARGIN_MS;
}

export interface MeteringSchedulerOptions {
  readonly export: MeteringExportOptions;
  readonly lease: ExportLease;
  readonly delayMs: number;
  readonly metrics: MarketplaceMetrics;
  readonly log: FastifyBaseLogger;
}

/** What one `tick` did, for tests and logs. */
export interface TickOutcome {
  readonly ran: boolean;
  /** Hours exported in this run, oldest first. */
  readonly exported: readonly number[];
  /** Hours left open after this run. */
  readonly open: readonly number[];
}

const NOT_RUN: TickOutcome = { ran: false, exported: [], open: [] };

function isOpen(entry: LedgerEntry): boolean {
  return entry.status === 'pending' || entry.status === 'sent';
}

export class MeteringScheduler {
  private nextDueMs = Number.NEGATIVE_INFINITY;
  private readonly failedRuns = new Map<number, number>();
  private readonly flagged = new Set<string>();
  private readonly lateChecked = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<TickOutcome> | null = null;

  constructor(private readonly options: MeteringSchedulerOptions) {}

  /** Checks every POLL_MS whether a run is due; the first check runs at once. */
  start(): void {
    if (this.timer !== undefined) return;
    const poll = () => {
      void this.tick().catch((err: unknown) => this.options.log.error({ err }, 'marketplace metering: scheduled export failed'));
    };
    this.timer = setInterval(poll, POLL_MS);
    this.timer.unref();
    poll();
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }

  /** The last finished hour whose export is due at `nowMs`. */
  lastDueHour(nowMs: number): number {
    return Math.floor((nowMs - this.options.delayMs) / HOUR_MS) * HOUR_MS - HOUR_MS;
  }

  /** Runs when due (and not already running); answers what it did. */
  tick(): Promise<TickOutcome> {
    if (this.running !== null) return Promise.resolve(NOT_RUN);
    const nowMs = this.options.export.nowMs();
    if (nowMs < this.nextDueMs) return Promise.resolve(NOT_RUN);
    this.running = this.run(nowMs).finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async run(nowMs: number): Promise<TickOutcome> {
    const { lease, log } = this.options;
    let held;
    try {
      held = await lease.acquire(LEASE_TTL_MS);
    } catch (err) {
      log.warn({ err }, 'marketplace metering: the export lease could not be taken; retrying later');
      held = null;
    }
    if (held === null) {
      this.nextDueMs = nowMs + RETRY_MS;
      return NOT_RUN;
    }
    try {
      const outcome = await this.exportDue(nowMs);
      const lastDue = this.lastDueHour(nowMs);
      this.nextDueMs = outcome.open.length > 0 ? nowMs + RETRY_MS : lastDue + 2 * HOUR_MS + this.options.delayMs;
      return outcome;
    } catch (err) {
      this.nextDueMs = nowMs + RETRY_MS;
      throw err;
    } finally {
      await held.release().catch((err: unknown) => log.warn({ err }, 'marketplace metering: the export lease could not be released; it expires'));
    }
  }

  /** Hours from the lookback to the last due one that some marketplace organization still needs. */
  private async hoursToSettle(nowMs: number): Promise<readonly number[]> {
    const { store, metering } = this.options.export;
    const lastDue = this.lastDueHour(nowMs);
    const first = Math.floor((nowMs - MISSED_LOOKBACK_MS) / HOUR_MS) * HOUR_MS;
    const organizations = (await store.listOrganizations()).filter(isMarketplaceOrganization);
    if (organizations.length === 0 || lastDue < first) return [];
    const settled = new Set<string>();
    for (const entry of await metering.ledger(first, lastDue + HOUR_MS)) {
      if (!isOpen(entry)) settled.add(`${entry.hourMs}|${entry.orgId}|${entry.dimension}`);
    }
    const hours: number[] = [];
    for (let hourMs = first; hourMs <= lastDue; hourMs += HOUR_MS) {
      const needed = organizations.some(
        (org: Organization) =>
          org.createdAt.getTime() < hourMs + HOUR_MS && METERING_DIMENSIONS.some((dimension) => !settled.has(`${hourMs}|${org.id}|${dimension}`)),
      );
      if (needed) hours.push(hourMs);
    }
    return hours;
  }

  private async exportDue(nowMs: number): Promise<TickOutcome> {
    const { log } = this.options;
    const hours = await this.hoursToSettle(nowMs);
    // Each hour out of the window is looked at once per process: it cannot change any more.
    const late = hours.filter((hourMs) => !withinWindow(hourMs, nowMs) && !this.lateChecked.has(hourMs));
    for (const hourMs of late) {
      if (await this.hadUsage(hourMs)) this.flag(hourMs, 'outside_window');
      this.lateChecked.add(hourMs);
    }
    const exported: number[] = [];
    const open: number[] = [];
    for (const hourMs of hours.filter((hour) => withinWindow(hour, nowMs))) {
      let stillOpen: boolean;
      try {
        const ledger = await exportHour(this.options.export, hourMs);
        stillOpen = ledger.some(isOpen);
        exported.push(hourMs);
      } catch (err) {
        // The marketplace failing leaves the hour's entries computed, so later hours may go on;
        // anything else (the store) stops the run, keeping the hours (and their carry) in order.
        if (!(err instanceof AppError && err.code === ERRORS.MarketplaceUnavailable.code)) throw err;
        log.warn({ err, hour: formatHour(hourMs) }, 'marketplace metering: the export of the hour failed; retrying later');
        stillOpen = true;
      }
      if (!stillOpen) {
        this.failedRuns.delete(hourMs);
        continue;
      }
      open.push(hourMs);
      const runs = (this.failedRuns.get(hourMs) ?? 0) + 1;
      this.failedRuns.set(hourMs, runs);
      if (runs >= FAILING_AFTER_RUNS) this.flag(hourMs, 'failing');
    }
    return { ran: true, exported, open };
  }

  /**
   * Whether an hour out of the window held anything billable: open entries, or no entries for an
   * organization that made calls or had a baselined machine in it.
   */
  private async hadUsage(hourMs: number): Promise<boolean> {
    const { store, metering } = this.options.export;
    const ledger = await metering.ledger(hourMs, hourMs + HOUR_MS);
    if (ledger.some(isOpen)) return true;
    const recorded = new Set(ledger.map((entry) => entry.orgId));
    if ((await metering.callsInHour(hourMs)).some((count) => count.calls > 0 && !recorded.has(count.orgId))) return true;
    for (const org of (await store.listOrganizations()).filter(isMarketplaceOrganization)) {
      if (recorded.has(org.id) || org.createdAt.getTime() >= hourMs + HOUR_MS) continue;
      if ((await monitoredMachines(store, org.id, hourMs)) > 0) return true;
    }
    return false;
  }

  private flag(hourMs: number, reason: UnreportedReason): void {
    const key = `${reason}|${hourMs}`;
    if (this.flagged.has(key)) return;
    this.flagged.add(key);
    this.options.metrics.recordUnreportedHour(reason);
    this.options.log.error(
      { hour: formatHour(hourMs), reason },
      reason === 'outside_window'
        ? 'marketplace metering: an hour was not reported and is outside the marketplace acceptance window'
        : 'marketplace metering: the export of an hour keeps failing',
    );
  }
}
