// The producer a route plugin publishes with (telemetry, detection jobs): opened on the first
// publish rather than at boot, so a server whose bus is down still starts and answers; an open that
// failed is tried again on the next call; closed with the plugin's instance.
import type { FastifyInstance } from 'fastify';
import type { Bus, BusProducer } from '@adp/streaming';

export function lazyProducer(app: FastifyInstance): (source: Pick<Bus, 'producer'>) => Promise<BusProducer> {
  let producer: Promise<BusProducer> | null = null;
  app.addHook('onClose', async () => {
    const opened = await producer?.catch(() => null);
    await opened?.close();
  });
  return (source) => {
    producer ??= source.producer().catch((err: unknown) => {
      producer = null;
      throw err;
    });
    return producer;
  };
}
