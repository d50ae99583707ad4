// Fastify validation for the platform's JSON routes: each route's TypeBox schemas run on its body,
// query string and path, and the first failure becomes a coded AppError (`{"error":{"code",
// "message"}}`) whose message names the field by its path: "series[12].value must be a number
// from -1e+100 to 1e+100". Rules a schema cannot state (ascending timestamps, limits from
// configuration, rules between items) run in the handlers after this, on data the schema vouches for.
//
// Bodies are validated as sent: no type coercion, no defaults filled in, no fields removed (a
// number sent as a string is an error, not a number). Query strings and paths are text on the wire,
// so there Ajv coerces to the schema's types ("limit=50" is the integer 50).
//
// `format: 'date-time'` documents timestamps but is not checked here: the handlers parse every
// timestamp into milliseconds anyway, and their parser's refusal is the one message a bad
// timestamp gets, so no body is read twice for the same rule.
import { Ajv, type ErrorObject } from 'ajv';
import type { FastifyInstance, FastifySchema, FastifySchemaCompiler } from 'fastify';
import type { Static, TSchema } from 'typebox';
import { AppError, ERRORS, type ErrorName } from './errors.js';

export interface SchemaErrorCodes {
  /**
   * A failure at or under one of these fields (a property name in the schema) answers that code;
   * the deepest named field wins (`series_list[2].machine_id` is the machine id's). Any other
   * failure is InvalidArgument.
   */
  readonly fields: Readonly<Record<string, ErrorName>>;
  /** What each string pattern (by its source) means, for messages: "1 to 128 characters from ...". */
  readonly patterns?: Readonly<Record<string, string>>;
}

function newAjv(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ coerceTypes, useDefaults: false, removeAdditional: false, allErrors: false, verbose: true, strict: false });
  ajv.addFormat('date-time', true);
  return ajv;
}

/**
 * The validator compiler of one plugin's routes: bodies without coercion, query strings and paths
 * with it (see the file comment).
 */
export function schemaValidatorCompiler(): FastifySchemaCompiler<FastifySchema> {
  const bodies = newAjv(false);
  const text = newAjv(true);
  return ({ schema, httpPart }) => (httpPart === 'body' ? bodies : text).compile(schema as object);
}

/** Validation on, for one plugin's routes, with failures answered as `codes` says; returns the compiler it set (for a route that wraps it). */
export function useSchemaValidation(app: FastifyInstance, codes: SchemaErrorCodes): FastifySchemaCompiler<FastifySchema> {
  const compiler = schemaValidatorCompiler();
  app.setValidatorCompiler(compiler);
  app.setSchemaErrorFormatter(schemaErrorFormatter(codes));
  return compiler;
}

/**
 * A body check outside Fastify's, for a body a route builds itself (a CSV file read into the JSON
 * body): the same Ajv settings and error formatter. Returns the body typed by its schema.
 */
export function bodyValidator<S extends TSchema>(schema: S, codes: SchemaErrorCodes): (body: unknown) => Static<S> {
  const validate = newAjv(false).compile(schema);
  const format = schemaErrorFormatter(codes);
  return (body) => {
    if (validate(body)) return body as Static<S>;
    throw format(validate.errors ?? [], 'body');
  };
}

type SchemaObject = Record<string, unknown>;

function isSchemaObject(value: unknown): value is SchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Keywords that only say that a subschema failed; the subschema's own error says more. */
const COMBINATORS = new Set(['anyOf', 'oneOf', 'allOf', 'if', 'then', 'else', 'propertyNames']);

function segments(pointer: string): string[] {
  return pointer === '' ? [] : pointer.slice(1).split('/').map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/**
 * How deep into the data an error is: its path, and half a step for the missing field of a
 * `required`, so that a field that was sent and is wrong outranks one of another form that was not.
 */
function depth(error: ErrorObject): number {
  return segments(error.instancePath).length + (error.keyword === 'required' ? 0.5 : 0);
}

/**
 * The error to report. Of the branches of a union (a point with `value` or with `channels`, a
 * field or null) the one that got furthest into the data says what is wrong; ties go to the
 * first, the schema's preferred form.
 */
function chosen(errors: readonly ErrorObject[]): ErrorObject | undefined {
  let best: ErrorObject | undefined;
  for (const error of errors) {
    if (COMBINATORS.has(error.keyword)) continue;
    if (best === undefined || depth(error) > depth(best)) best = error;
  }
  return best ?? errors[0];
}

/** `series[12].value`; a root field of a query or path as "The 'limit' query parameter". */
function fieldName(dataVar: string, path: readonly string[]): string {
  if (path.length === 0) return dataVar === 'body' ? 'The request body' : `The ${dataVar === 'params' ? 'path' : 'query string'}`;
  if (dataVar === 'querystring') return `The '${path.join('.')}' query parameter`;
  if (dataVar === 'params') return `The '${path.join('.')}' path parameter`;
  let name = '';
  for (const part of path) {
    if (/^\d+$/.test(part)) name += `[${part}]`;
    else name += name === '' ? part : `.${part}`;
  }
  return name;
}

function bounds(schema: SchemaObject): string {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = schema;
  if (typeof minimum === 'number' && typeof maximum === 'number') return ` from ${minimum} to ${maximum}`;
  const parts: string[] = [];
  if (typeof minimum === 'number') parts.push(`>= ${minimum}`);
  if (typeof exclusiveMinimum === 'number') parts.push(`> ${exclusiveMinimum}`);
  if (typeof maximum === 'number') parts.push(`<= ${maximum}`);
  if (typeof exclusiveMaximum === 'number') parts.push(`< ${exclusiveMaximum}`);
  return parts.length === 0 ? '' : ` ${parts.join(' and ')}`;
}

function counted(min: unknown, max: unknown, noun: string): string {
  const one = (count: number): string => (count === 1 ? noun.replace(/ies$/, 'y').replace(/s$/, '') : noun);
  if (typeof min === 'number' && typeof max === 'number') return min === max ? `${min} ${one(min)}` : `${min} to ${max} ${noun}`;
  if (typeof min === 'number') return `at least ${min} ${one(min)}`;
  if (typeof max === 'number') return `at most ${max} ${one(max)}`;
  return '';
}

/** What a schema accepts, in words: "an integer from 0 to 99", "one of hourly, daily". */
function accepted(schema: unknown, patterns: Readonly<Record<string, string>>): string {
  if (!isSchemaObject(schema)) return 'valid';
  if (Array.isArray(schema['enum'])) return `one of ${schema['enum'].map(String).join(', ')}`;
  if (schema['const'] !== undefined) return `'${String(schema['const'])}'`;
  switch (schema['type']) {
    case 'integer':
      return `an integer${bounds(schema)}`;
    case 'number':
      return `a number${bounds(schema)}`;
    case 'boolean':
      return 'true or false';
    case 'null':
      return 'null';
    case 'string': {
      if (schema['format'] === 'date-time') return 'an ISO 8601 date-time such as 2024-01-01T00:00:00Z';
      const pattern = schema['pattern'];
      if (typeof pattern === 'string') return patterns[pattern] ?? `a string matching ${pattern}`;
      const length = counted(schema['minLength'], schema['maxLength'], 'characters');
      return length === '' ? 'a string' : `a string of ${length}`;
    }
    case 'array': {
      const items = counted(schema['minItems'], schema['maxItems'], 'items');
      return items === '' ? 'an array' : `an array of ${items}`;
    }
    case 'object':
      return 'an object';
    default:
      return 'valid';
  }
}

function messageOf(error: ErrorObject, dataVar: string, patterns: Readonly<Record<string, string>>): string {
  const path = segments(error.instancePath);
  const field = fieldName(dataVar, path);
  const parent = isSchemaObject(error.parentSchema) ? error.parentSchema : {};
  const length = Array.isArray(error.data) ? error.data.length : isSchemaObject(error.data) ? Object.keys(error.data).length : 0;
  // A failure of `propertyNames`: the key is what is wrong, not the object.
  const key = (error as { propertyName?: unknown }).propertyName;
  if (typeof key === 'string') return `${field} has the key '${key.slice(0, 64)}', which is not ${accepted(parent, patterns)}`;
  switch (error.keyword) {
    case 'required': {
      const missing = String((error.params as { missingProperty?: unknown }).missingProperty);
      const properties = isSchemaObject(parent['properties']) ? parent['properties'] : {};
      // What the field takes, where that says more than its type.
      const wanted = accepted(properties[missing], patterns);
      const plain = ['valid', 'a string', 'a number', 'an object', 'an array', 'true or false'].includes(wanted);
      return `${fieldName(dataVar, [...path, missing])} is required${plain ? '' : ` (${wanted})`}`;
    }
    case 'minItems':
    case 'maxItems':
      return `${field} must have ${counted(parent['minItems'], parent['maxItems'], 'items')}; it has ${length}`;
    case 'minProperties':
    case 'maxProperties':
      return `${field} must have ${counted(parent['minProperties'], parent['maxProperties'], 'entries')}; it has ${length}`;
    case 'additionalProperties': {
      const extra = String((error.params as { additionalProperty?: unknown }).additionalProperty);
      const keys = isSchemaObject(parent['patternProperties']) ? Object.keys(parent['patternProperties']) : [];
      const rule = keys.length === 1 ? (patterns[keys[0]!] ?? `matching ${keys[0]!}`) : null;
      if (rule !== null) return `${field} has the key '${extra.slice(0, 64)}', which is not ${rule}`;
      return `${fieldName(dataVar, [...path, extra])} is not a field this request takes`;
    }
    case 'not': {
      // The excluded form may say what is wrong with it ("must have exactly one of ...").
      if (isSchemaObject(error.schema) && typeof error.schema['description'] === 'string') return `${field} ${error.schema['description']}`;
      const excluded = isSchemaObject(error.schema) && Array.isArray(error.schema['required']) ? error.schema['required'].map(String) : [];
      return excluded.length === 0 ? `${field} is not valid here` : `${field} must not have ${excluded.map((name) => `'${name}'`).join(' or ')} here`;
    }
    case 'type':
      // A body that is not an object names what JSON clients think of it as.
      if (path.length === 0 && dataVar === 'body' && parent['type'] === 'object') return 'The request body must be a JSON object';
      return `${field} must be ${accepted(parent, patterns)}`;
    default:
      return `${field} must be ${accepted(parent, patterns)}`;
  }
}

/** The field names of a schema path (`#/properties/series/items/properties/value/type` → series, value). */
function schemaFields(schemaPath: string): string[] {
  const parts = schemaPath.split('/');
  const fields: string[] = [];
  for (let index = 0; index < parts.length - 1; index++) if (parts[index] === 'properties') fields.push(parts[index + 1]!);
  return fields;
}

function codeOf(error: ErrorObject, fields: Readonly<Record<string, ErrorName>>): ErrorName {
  const named = schemaFields(error.schemaPath);
  if (error.keyword === 'required') named.push(String((error.params as { missingProperty?: unknown }).missingProperty));
  for (let index = named.length - 1; index >= 0; index--) {
    const code = Object.hasOwn(fields, named[index]!) ? fields[named[index]!] : undefined;
    if (code !== undefined) return code;
  }
  return 'InvalidArgument';
}

/**
 * A rule that holds only under a condition (an if/then) says which: the description of the
 * subschema it fails in ("when granularity is not 'none'").
 */
function condition(error: ErrorObject): string {
  const description = isSchemaObject(error.parentSchema) ? error.parentSchema['description'] : undefined;
  return error.schemaPath.includes('/then/') && typeof description === 'string' ? ` ${description}` : '';
}

/** Fastify's schema error formatter: Ajv's errors to one coded AppError. */
export function schemaErrorFormatter(codes: SchemaErrorCodes): (errors: unknown[], dataVar: string) => Error {
  const patterns = codes.patterns ?? {};
  return (errors, dataVar) => {
    const error = chosen(errors as ErrorObject[]);
    if (error === undefined) return new AppError(ERRORS.InvalidArgument, `The request ${dataVar} is not valid.`);
    return new AppError(ERRORS[codeOf(error, codes.fields)], `${messageOf(error, dataVar, patterns)}${condition(error)}.`);
  };
}
