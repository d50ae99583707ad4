// The `.avsc` files are the one source of the topics' schemas; src/avro/schemas.ts spells their
// canonical forms for the TS types to be derived from. These tests hold the two together and check
// the conventions every schema follows.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { REGIMES, type DeadLetter, type DetectionResult, type Regime, type TelemetryBatch, type TelemetryPoint } from '../src/index.js';
import { DEFAULT_AVRO_SCHEMA_DIR, STREAMING_RECORDS, canonicalSchema, readAvroSchemaFile } from '../src/avro/codecs.js';

interface FieldJson {
  name: string;
  type: unknown;
  doc?: string;
  default?: unknown;
}

const records = Object.entries(STREAMING_RECORDS).map(([record, { file, canonical }]) => ({
  record,
  file,
  canonical,
  json: JSON.parse(readFileSync(join(DEFAULT_AVRO_SCHEMA_DIR, file), 'utf8')) as {
    namespace?: string;
    doc?: string;
    fields: FieldJson[];
  },
}));

describe.each(records)('$file', ({ file, canonical, json }) => {
  it('has exactly the canonical form src/avro/schemas.ts derives the TS type from', () => {
    const type = readAvroSchemaFile(join(DEFAULT_AVRO_SCHEMA_DIR, file));
    expect(JSON.parse(canonicalSchema(type))).toEqual(canonical);
  });

  it('is namespaced and documented, every field too', () => {
    expect(json.namespace).toBe('adp.streaming');
    expect(json.doc).toBeTruthy();
    for (const field of json.fields) expect(field.doc, field.name).toBeTruthy();
  });

  it('gives every nullable field a null default, so it can be added or dropped later', () => {
    for (const field of json.fields) {
      if (Array.isArray(field.type) && field.type[0] === 'null') expect(field, field.name).toHaveProperty('default', null);
    }
  });
});

describe('derived TS types', () => {
  it('TelemetryPoint', () => {
    expectTypeOf<TelemetryPoint>().toEqualTypeOf<{
      organization: string;
      machine_id: string;
      timestamp: number;
      value: number | null;
      channels: { name: string; value: number }[] | null;
      tags: Record<string, string>;
    }>();
  });

  it('TelemetryBatch', () => {
    expectTypeOf<TelemetryBatch>().toEqualTypeOf<{
      organization: string;
      machine_id: string;
      points: { timestamp: number; value: number | null; channels: { name: string; value: number }[] | null }[];
      tags: Record<string, string>;
    }>();
  });

  it('DetectionResult', () => {
    expectTypeOf<Regime>().toEqualTypeOf<'HEALTHY' | 'ACTIVE' | 'TRANSITION' | 'SHOCK' | 'UNKNOWN'>();
    expectTypeOf<DetectionResult['energy']>().toEqualTypeOf<number | null>();
    expectTypeOf<DetectionResult['is_anomaly']>().toEqualTypeOf<boolean>();
    expect(REGIMES).toEqual(['HEALTHY', 'ACTIVE', 'TRANSITION', 'SHOCK', 'UNKNOWN']);
  });

  it('DeadLetter', () => {
    expectTypeOf<DeadLetter['original_value']>().toEqualTypeOf<Buffer>();
    expectTypeOf<DeadLetter['original_key']>().toEqualTypeOf<Buffer | null>();
    expectTypeOf<DeadLetter['source_offset']>().toEqualTypeOf<number>();
  });
});
