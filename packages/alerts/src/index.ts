// @adp/alerts: episodes of judged series and the alerts they raise, feedback that makes a pattern
// familiar, and webhook delivery (Standard Webhooks signing, the address guard, the dispatcher).
export {
  NO_EPISODE,
  decodeEpisodeState,
  encodeEpisodeState,
  followEpisodes,
  judgedPointOfRow,
  type EpisodeEvent,
  type EpisodeOptions,
  type EpisodePeak,
  type EpisodeState,
  type JudgedPoint,
  type OpenEpisode,
  type PointVerdict,
} from './episodes.js';
export { DEFAULT_EPISODE_QUIET_POINTS, seriesEpisodes, type SeriesEpisode, type SeriesVerdicts } from './series-episodes.js';
export { feedbackVerdict, patternOf } from './feedback.js';
export { NO_REGIME, followRegimes, type RegimeChange, type RegimeState } from './regimes.js';
export { ALERT_EVENT_TYPES, alertPayload, targetWants, type AlertEventType } from './payload.js';
export { newWebhookSecret, signDelivery, signingSecrets, type SignedHeaders } from './signing.js';
export { TARGET_REFUSALS, TargetRefused, isPublicAddress, parseTargetUrl, resolveTarget, type Lookup, type TargetRefusalCode } from './address-guard.js';
export { DeliveryConnections, attemptDelivery, type AttemptOutcome } from './deliver.js';
export {
  DEFAULT_RETRY_SCHEDULE,
  WebhookDispatcher,
  deliveryIdOf,
  type DispatcherConfig,
  type DispatcherDeps,
  type DispatcherLogger,
  type RetrySchedule,
} from './dispatcher.js';
