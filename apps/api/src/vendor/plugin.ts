// Placeholder until the vendor routes land: registers nothing.
import type { FastifyPluginAsync } from 'fastify';
import type { VendorRoutesOptions } from './contract.js';

export const vendorRoutes: FastifyPluginAsync<VendorRoutesOptions> = async () => {};
