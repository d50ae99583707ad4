// The operators' metering routes, behind the admin token: run the export of a finished hour by
// hand, and read the ledger.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { HOUR_MS, type LedgerEntry } from '@adp/store';
import { AppError, ERRORS } from '../errors.js';
import { exportHour, formatHour, parseHour, type MeteringExportOptions } from './export.js';

/** Widest ledger window one read may ask for. */
export const LEDGER_MAX_HOURS = 24 * 31;

function entryView(entry: LedgerEntry) {
  return {
    org_id: entry.orgId,
    customer: entry.customer,
    license_arn: entry.licenseArn,
    dimension: entry.dimension,
    hour: formatHour(entry.hourMs),
    used: entry.used,
    carried_in: entry.carriedIn,
    quantity: entry.quantity,
    carried_out: entry.carriedOut,
    status: entry.status,
    updated_at: entry.updatedAt.toISOString(),
  };
}

function hourArgument(name: string, value: unknown): number {
  const hourMs = typeof value === 'string' ? parseHour(value) : null;
  if (hourMs === null) throw new AppError(ERRORS.BadRequest, `${name} must be a UTC hour written YYYY-MM-DDTHH, e.g. 2026-03-15T12.`);
  return hourMs;
}

/** `options` is null when the store keeps no metering: the routes then answer 503. */
export function meteringAdminRoutes(options: Omit<MeteringExportOptions, 'log'> | null): FastifyPluginAsync {
  return async (app: FastifyInstance) => {
    const publicRoute = { public: true } as const;
    const schema = { tags: ['admin'], security: [{ adminToken: [] }] };
    const available = () => {
      if (options === null) throw new AppError(ERRORS.ServiceUnavailable, 'This store keeps no marketplace metering.');
      return options;
    };

    app.post('/admin/v1/metering/export', { config: publicRoute, schema: { ...schema, summary: 'Export a finished UTC hour to the marketplace' } }, async (request) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const hourMs = hourArgument('hour', body['hour']);
      const ledger = await exportHour({ ...available(), log: request.log }, hourMs);
      return { hour: formatHour(hourMs), entries: ledger.map(entryView) };
    });

    app.get('/admin/v1/metering', { config: publicRoute, schema: { ...schema, summary: 'The metering ledger, hours from (inclusive) to (exclusive)' } }, async (request) => {
      const query = request.query as Record<string, unknown>;
      const fromMs = hourArgument('from', query['from']);
      const toMs = hourArgument('to', query['to']);
      if (toMs <= fromMs || toMs - fromMs > LEDGER_MAX_HOURS * HOUR_MS) {
        throw new AppError(ERRORS.BadRequest, `to must be after from, at most ${LEDGER_MAX_HOURS} hours later.`);
      }
      const ledger = await available().metering.ledger(fromMs, toMs);
      return { entries: ledger.map(entryView) };
    });
  };
}
