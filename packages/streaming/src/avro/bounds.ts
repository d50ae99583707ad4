// A bounds check of an Avro binary body before avsc decodes it.
//
// avsc reads an array or a map block by block and trusts each block's item count: it checks that
// the bytes sufficed only after the whole value is built. A message of a hundred bytes that claims
// 2^60 items therefore makes it push items until the process runs out of memory (found by
// mutating the golden messages: a 119-byte TelemetryBatch took a worker to a 4 GB heap and a
// crash; every worker of the group would then crash on the same offset). This walk reads the body
// as the writer's schema lays it out, builds nothing, and refuses a count, a length or an index
// that the bytes left cannot hold, before any item is decoded. What it accepts, avsc decodes or
// refuses on its own terms (trailing bytes, a resolver's mismatch).
import type { Type as AvroType } from 'avsc';

/** Why a body is refused (the caller wraps it in MESSAGE_BODY_CORRUPT). */
export class AvroBoundsError extends Error {
  override readonly name = 'AvroBoundsError';
}

/** Items a block may claim when an item can take no bytes at all (an array of nulls). */
const EMPTY_ITEMS_PER_BLOCK = 65_536;

interface Reader {
  readonly bytes: Uint8Array;
  pos: number;
}

type Check = (reader: Reader) => void;

interface Compiled {
  readonly check: Check;
  /** The fewest bytes a value of the type can take. */
  readonly minBytes: number;
}

function fail(reader: Reader, what: string): never {
  throw new AvroBoundsError(`${what} at byte ${reader.pos} of ${reader.bytes.length}`);
}

/** A zig-zag varint as Avro writes int and long: at most 10 bytes; the value as a JS number. */
function readLong(reader: Reader): number {
  let result = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (reader.pos >= reader.bytes.length) fail(reader, 'a number runs past the end');
    const byte = reader.bytes[reader.pos++]!;
    result += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
    scale *= 128;
  }
  return fail(reader, 'a number longer than 10 bytes');
}

function skip(reader: Reader, count: number, what: string): void {
  if (count > reader.bytes.length - reader.pos) fail(reader, `${what} of ${count} bytes runs past the end`);
  reader.pos += count;
}

/** A block sequence (array or map) whose items each need at least `minItem` bytes. */
function blocks(minItem: number, item: Check, what: string): Check {
  return (reader) => {
    for (;;) {
      let count = readLong(reader);
      if (count === 0) return;
      if (count < 0) {
        count = -count;
        const size = readLong(reader);
        if (size < 0) fail(reader, `a negative size of ${what} block`);
      }
      const left = reader.bytes.length - reader.pos;
      if (minItem > 0 ? count * minItem > left : count > EMPTY_ITEMS_PER_BLOCK) {
        fail(reader, `${what} block of ${count} items that the ${left} bytes left cannot hold`);
      }
      for (let i = 0; i < count; i++) item(reader);
    }
  };
}

/** A string or bytes value (also a map's key): a length, then that many bytes. */
function lengthPrefixed(name: string): Compiled {
  return {
    check: (r) => {
      const length = readLong(r);
      if (length < 0) fail(r, `a negative ${name} length`);
      skip(r, length, `a ${name}`);
    },
    minBytes: 1,
  };
}

const compiledTypes = new WeakMap<AvroType, Compiled>();
/** Types being compiled: a recursive schema (a record that contains itself) refers back lazily. */
const compiling = new Set<AvroType>();

function compile(type: AvroType): Compiled {
  const cached = compiledTypes.get(type);
  if (cached) return cached;
  if (compiling.has(type)) return { check: (reader) => compiledTypes.get(type)!.check(reader), minBytes: 0 };
  compiling.add(type);
  try {
    const compiled = compileUncached(type);
    compiledTypes.set(type, compiled);
    return compiled;
  } finally {
    compiling.delete(type);
  }
}

function compileUncached(type: AvroType): Compiled {
  const t = type as AvroType & {
    readonly fields?: readonly { readonly type: AvroType }[];
    readonly itemsType?: AvroType;
    readonly valuesType?: AvroType;
    readonly types?: readonly AvroType[];
    readonly symbols?: readonly string[];
    readonly size?: number;
    readonly underlyingType?: AvroType;
  };
  const name = t.typeName;
  switch (name) {
    case 'null':
      return { check: () => undefined, minBytes: 0 };
    case 'boolean':
      return { check: (r) => skip(r, 1, 'a boolean'), minBytes: 1 };
    case 'int':
    case 'long':
      return { check: (r) => void readLong(r), minBytes: 1 };
    case 'float':
      return { check: (r) => skip(r, 4, 'a float'), minBytes: 4 };
    case 'double':
      return { check: (r) => skip(r, 8, 'a double'), minBytes: 8 };
    case 'string':
    case 'bytes':
      return lengthPrefixed(name);
    case 'fixed': {
      const size = t.size ?? 0;
      return { check: (r) => skip(r, size, 'a fixed'), minBytes: size };
    }
    case 'enum': {
      const symbols = t.symbols?.length ?? 0;
      return {
        check: (r) => {
          const index = readLong(r);
          if (index < 0 || index >= symbols) fail(r, `enum index ${index} of ${symbols} symbols`);
        },
        minBytes: 1,
      };
    }
    case 'array': {
      const items = compile(t.itemsType!);
      return { check: blocks(items.minBytes, items.check, 'an array'), minBytes: 1 };
    }
    case 'map': {
      const values = compile(t.valuesType!);
      const key = lengthPrefixed('string');
      const entry: Check = (r) => {
        key.check(r);
        values.check(r);
      };
      return { check: blocks(1 + values.minBytes, entry, 'a map'), minBytes: 1 };
    }
    case 'record':
    case 'error': {
      const fields = (t.fields ?? []).map((field) => compile(field.type));
      return {
        check: (r) => {
          for (const field of fields) field.check(r);
        },
        minBytes: fields.reduce((sum, field) => sum + field.minBytes, 0),
      };
    }
    default: {
      if (name.startsWith('union')) {
        const branches = (t.types ?? []).map(compile);
        return {
          check: (r) => {
            const index = readLong(r);
            if (index < 0 || index >= branches.length) fail(r, `union branch ${index} of ${branches.length}`);
            branches[index]!.check(r);
          },
          minBytes: 1 + Math.min(...branches.map((branch) => branch.minBytes)),
        };
      }
      if (t.underlyingType) return compile(t.underlyingType);
      throw new Error(`checkAvroBounds: no bounds check for Avro type ${name}`);
    }
  }
}

/**
 * Walks `body` as `writer` lays a value out, without building it; throws AvroBoundsError where a
 * count, a length, an index or a number cannot be what a real value of the type wrote.
 */
export function checkAvroBounds(writer: AvroType, body: Uint8Array): void {
  compile(writer).check({ bytes: body, pos: 0 });
}
