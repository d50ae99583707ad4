// Feedback on a machine's episodes: /v1/machines/{machine_id}/feedback. A span marked
// `not_anomaly` makes later points like its flagged ones familiar to alerting (they no longer
// raise the machine's episodes); `anomaly` makes points like the marked ones flag. The pattern is
// taken from the stored results of the span when the feedback is given (@adp/alerts patternOf),
// kept with it, and the workers hear of the change at once. Results rows are never changed.
import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyRequest } from 'fastify';
import { parseIsoTimestamp } from '@adp/detection';
import { judgedPointOfRow, patternOf } from '@adp/alerts';
import { FEEDBACK_LABELS, type AlertingStore, type FeedbackLabel, type MachineFeedback } from '@adp/store';
import { FEEDBACK_CHANGED_CHANNEL, type Notifier, type ResultStore } from '@adp/streaming';
import { AppError, ERRORS } from '../errors.js';
import { parseMachineId } from '../native/request.js';
import { audit } from '../tenancy/audit.js';
import { ErrorBody, FeedbackBody, FeedbackList, FeedbackParams, FeedbackView, MachineParams } from './schemas.js';

export interface FeedbackRoutesOptions {
  readonly results?: ResultStore;
  readonly notifier?: Notifier;
  readonly nowMs?: () => number;
}

/** Points of a span read for its pattern at most. */
const SPAN_POINTS_MAX = 10_000;
const TAGS = ['feedback'];

function alertingOf(request: FastifyRequest): AlertingStore {
  const alerting = request.server.store.alerting;
  if (!alerting) throw new AppError(ERRORS.ServiceUnavailable, 'Feedback needs the platform store, which this server runs without.');
  return alerting;
}

function view(feedback: MachineFeedback) {
  return {
    feedback_id: feedback.feedbackId,
    machine_id: feedback.machineId,
    from: new Date(feedback.fromMs).toISOString(),
    to: new Date(feedback.toMs).toISOString(),
    label: feedback.label,
    pattern: feedback.pattern,
    created_at: feedback.createdAt.toISOString(),
  };
}

export const feedbackRoutes: FastifyPluginAsyncTypebox<FeedbackRoutesOptions> = async (app, options) => {
  const announce = async (request: FastifyRequest, orgId: string, machineId: string): Promise<void> => {
    // The workers re-read within WORKER_BASELINE_REFRESH_MS anyway; a lost announcement only delays it.
    await options.notifier?.publish(FEEDBACK_CHANGED_CHANNEL, JSON.stringify({ orgId, machineId })).catch((err: unknown) => {
      request.log.warn({ err, machineId }, 'could not announce a feedback change; workers pick it up at their next refresh');
    });
  };

  app.post(
    '/v1/machines/:machine_id/feedback',
    {
      schema: {
        summary: 'Mark a span of a machine not_anomaly (like points stop raising episodes) or anomaly',
        tags: TAGS,
        params: MachineParams,
        body: FeedbackBody,
        response: { 201: FeedbackView, 400: ErrorBody, 503: ErrorBody },
      },
    },
    async (request, reply) => {
      const machineId = parseMachineId(request.params.machine_id, 'machine_id path parameter');
      const alerting = alertingOf(request);
      const fromMs = parseIsoTimestamp(request.body.from);
      const toMs = parseIsoTimestamp(request.body.to);
      if (fromMs === null || toMs === null) throw new AppError(ERRORS.InvalidFeedback, "'from' and 'to' must be ISO 8601 timestamps.");
      if (toMs <= fromMs) throw new AppError(ERRORS.InvalidFeedback, "'to' must be after 'from'.");
      const label = request.body.label;
      if (!(FEEDBACK_LABELS as readonly string[]).includes(label)) {
        throw new AppError(ERRORS.InvalidFeedback, `'label' must be one of ${FEEDBACK_LABELS.join(', ')}.`);
      }
      if (!options.results) throw new AppError(ERRORS.ServiceUnavailable, 'Feedback needs the stored results, which this server runs without.');
      const rows = await options.results.query({ orgId: request.auth.orgId, machineId, fromMs, toMs, limit: SPAN_POINTS_MAX });
      const feedback: MachineFeedback = {
        feedbackId: `fb_${randomBytes(12).toString('hex')}`,
        orgId: request.auth.orgId,
        machineId,
        fromMs,
        toMs,
        label: label as FeedbackLabel,
        pattern: patternOf(rows.map(judgedPointOfRow)),
        createdAt: new Date(options.nowMs ? options.nowMs() : Date.now()),
      };
      await alerting.putFeedback(feedback);
      await audit(request, 'feedback.created', `machine:${machineId}`);
      await announce(request, feedback.orgId, machineId);
      return reply.code(201).send(view(feedback));
    },
  );

  app.get(
    '/v1/machines/:machine_id/feedback',
    {
      schema: {
        summary: "A machine's feedback, oldest first",
        tags: TAGS,
        params: MachineParams,
        response: { 200: FeedbackList, 400: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => {
      const machineId = parseMachineId(request.params.machine_id, 'machine_id path parameter');
      return { feedback: (await alertingOf(request).listFeedback(request.auth.orgId, machineId)).map(view) };
    },
  );

  app.delete(
    '/v1/machines/:machine_id/feedback/:feedback_id',
    {
      schema: {
        summary: 'Remove a piece of feedback (alerting forgets its pattern)',
        tags: TAGS,
        params: FeedbackParams,
        response: { 200: FeedbackView, 400: ErrorBody, 404: ErrorBody, 503: ErrorBody },
      },
    },
    async (request) => {
      const machineId = parseMachineId(request.params.machine_id, 'machine_id path parameter');
      const alerting = alertingOf(request);
      const existing = (await alerting.listFeedback(request.auth.orgId, machineId)).find((f) => f.feedbackId === request.params.feedback_id);
      if (!existing) throw new AppError(ERRORS.FeedbackNotFound, `Machine ${machineId} has no feedback ${request.params.feedback_id.slice(0, 128)}.`);
      await alerting.deleteFeedback(existing.orgId, existing.feedbackId);
      await audit(request, 'feedback.deleted', `machine:${machineId}`);
      await announce(request, existing.orgId, machineId);
      return view(existing);
    },
  );
};
