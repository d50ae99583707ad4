// The seam between the vendor-compatible routes and the rest of the app.
import type { FastifyRequest } from 'fastify';

/** Usage labels, one per detection endpoint (shared with the native API's metering). */
export type VendorEndpoint = 'entire/detect' | 'last/detect' | 'changepoint/detect';

export interface VendorRoutesOptions {
  /**
   * Called once per successful detection with the number of points in the request. The app wires
   * it to usage metering for the caller's organization (taken from `request.auth`).
   */
  readonly onDetected: (request: FastifyRequest, endpoint: VendorEndpoint, points: number) => Promise<void>;
  /**
   * Waits for what `onDetected` left running in the background (write-behind counts); the routes
   * call it when the app closes, before the app's own hooks close the store.
   */
  readonly drain?: () => Promise<void>;
  /** Largest accepted request body in bytes; larger bodies get a 413 in the vendor's error shape. */
  readonly bodyLimitBytes: number;
}
