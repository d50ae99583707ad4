// An example producer: writes telemetry straight to Kafka as the worker expects it, Avro
// single-object encoded and keyed `<organization>/<machine_id>`: one point a message
// (schemas/avro/telemetry.avsc), or with `--batch N`, N points of a machine a message
// (schemas/avro/telemetry-batch.avsc; cheaper for the broker and the workers).
//
//   npm run produce:example -- --points 2000 --machines 5 [--org org_default] [--spikes 3] [--batch 1]
//                              [--brokers 127.0.0.1:9092] [--topic adp.telemetry.v1] [--step-ms 60000]
//
// Each machine gets a smooth daily-ish wave with noise and `--spikes` injected spikes (printed, so
// you can find them in GET /v1/machines/{id}/results). Timestamps end now, one step apart.
// The brokers default to KAFKA_BROKERS, then 127.0.0.1:9092.
import { parseArgs } from 'node:util';
import {
  createKafkaBus,
  encodeTelemetryBatches,
  loadStreamingCodecs,
  TELEMETRY_BATCH_MAX_POINTS,
  TOPICS,
  type OutgoingMessage,
} from '@adp/streaming';
import { exampleSeries } from '@adp/stream-worker/testing';

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      points: { type: 'string', default: '2000' },
      machines: { type: 'string', default: '5' },
      spikes: { type: 'string', default: '3' },
      org: { type: 'string', default: 'org_default' },
      brokers: { type: 'string' },
      topic: { type: 'string', default: TOPICS.telemetry },
      'step-ms': { type: 'string', default: '60000' },
      batch: { type: 'string', default: '1' },
    },
  });
  const points = Number(args.points);
  const machines = Number(args.machines);
  const spikes = Number(args.spikes);
  const stepMs = Number(args['step-ms']);
  const batch = Number(args.batch);
  for (const [name, value] of Object.entries({ points, machines, spikes, stepMs })) {
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`--${name} must be a non-negative integer`);
  }
  if (!Number.isSafeInteger(batch) || batch < 1 || batch > TELEMETRY_BATCH_MAX_POINTS) {
    throw new Error(`--batch must be an integer from 1 to ${TELEMETRY_BATCH_MAX_POINTS}`);
  }
  const brokers = (args.brokers ?? process.env['KAFKA_BROKERS'] ?? '127.0.0.1:9092').split(',').map((b) => b.trim());
  const codecs = loadStreamingCodecs();
  const bus = createKafkaBus({ brokers, clientId: 'adp-example-producer' });
  try {
    await bus.ensureTopics([{ name: args.topic, partitions: 12 }]);
    const producer = await bus.producer();
    const series = exampleSeries({ points, machines, spikes, endMs: Date.now(), stepMs });
    // Interleaved by time, in chunks: how a fleet's telemetry arrives (with --batch, each
    // machine's next `batch` points in one message).
    const CHUNK = 5_000;
    const tags = { source: 'example-producer' };
    let pending: OutgoingMessage[] = [];
    let sent = 0;
    let messages = 0;
    for (let i = 0; i < points; i += batch) {
      for (const s of series) {
        const key = `${args.org}/${s.machineId}`;
        const end = Math.min(points, i + batch);
        if (batch === 1) {
          const value = codecs.telemetry.encode({
            organization: args.org,
            machine_id: s.machineId,
            timestamp: s.timestampsMs[i]!,
            value: s.values[i]!,
            channels: null,
            tags,
          });
          pending.push({ key, value });
        } else {
          const readings = s.timestampsMs.slice(i, end).map((timestamp, k) => ({ timestamp, value: s.values[i + k]!, channels: null }));
          const batchOf = { organization: args.org, machine_id: s.machineId, points: readings, tags };
          for (const value of encodeTelemetryBatches(codecs.telemetryBatch, batchOf)) pending.push({ key, value });
        }
        sent += end - i;
        if (pending.length >= CHUNK) {
          await producer.send(args.topic, pending);
          messages += pending.length;
          pending = [];
        }
      }
    }
    if (pending.length > 0) await producer.send(args.topic, pending);
    messages += pending.length;
    await producer.close();
    process.stdout.write(`sent ${sent} points in ${messages} messages to ${args.topic} (${machines} machines x ${points} points)\n`);
    for (const s of series) {
      const at = s.spikes.map((i) => new Date(s.timestampsMs[i]!).toISOString());
      process.stdout.write(`  ${args.org}/${s.machineId}: spikes at ${at.join(', ') || 'none'}\n`);
    }
  } finally {
    await bus.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
