import { describe, expect, it } from 'vitest';
import { AppError, ConfigError, ERRORS, definitionForStatus, registeredErrorCodes } from '../src/errors.js';

describe('error registry', () => {
  it('has unique codes', () => {
    const codes = registeredErrorCodes();
    expect(codes.length).toBeGreaterThan(0);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('names each definition after its code, with a valid HTTP status', () => {
    for (const [name, definition] of Object.entries(ERRORS)) {
      expect(definition.code).toBe(name);
      expect(definition.code).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(definition.statusCode).toBeGreaterThanOrEqual(400);
      expect(definition.statusCode).toBeLessThan(600);
    }
  });

  it('carries code, status and retriability on one base class', () => {
    const cause = new Error('disk gone');
    const error = new AppError(ERRORS.ServiceUnavailable, 'try later', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ code: 'ServiceUnavailable', statusCode: 503, retriable: true, message: 'try later', cause });
    const config = new ConfigError('PORT', 'must be a number');
    expect(config).toBeInstanceOf(AppError);
    expect(config).toMatchObject({ code: 'ConfigInvalid', variable: 'PORT', retriable: false });
  });

  it('maps framework statuses to registry entries', () => {
    expect(definitionForStatus(404)).toBe(ERRORS.NotFound);
    expect(definitionForStatus(413)).toBe(ERRORS.PayloadTooLarge);
    expect(definitionForStatus(415)).toBe(ERRORS.UnsupportedMediaType);
    expect(definitionForStatus(405)).toBe(ERRORS.MethodNotAllowed);
    expect(definitionForStatus(408)).toBe(ERRORS.RequestTimeout);
    expect(definitionForStatus(414)).toBe(ERRORS.UriTooLong);
    expect(definitionForStatus(431)).toBe(ERRORS.RequestHeaderFieldsTooLarge);
    expect(definitionForStatus(400)).toBe(ERRORS.BadRequest);
    expect(definitionForStatus(500)).toBe(ERRORS.InternalError);
  });
});
