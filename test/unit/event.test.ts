import { describe, expect, it } from 'vitest';
import { canonicalJson, parseEvent } from '../../lib/event';

const valid = {
  id: 'evt_42',
  shipmentId: 'shp_1001',
  status: 'delivered',
  occurredAt: '2026-12-02T10:15:00Z',
  data: { carrier: 'acme', signedBy: 'front desk' },
};
const body = (overrides: Record<string, unknown> = {}) => JSON.stringify({ ...valid, ...overrides });

describe('Function: parseEvent', () => {
  it('accepts the example of docs/contract.md §2 and names its type', () => {
    const result = parseEvent(body());

    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.type).toBe('shipment.delivered');
    expect(result.value.event).toEqual(valid);
    expect(result.value.body).toBe(canonicalJson(valid));
  });

  it('accepts an event without data and with a zone offset and fractions', () => {
    const { data: _unused, ...rest } = valid;
    const result = parseEvent(JSON.stringify({ ...rest, occurredAt: '2026-12-02T11:15:00.123+01:00' }));

    expect(result.ok).toBe(true);
  });

  it('gives the same body and hash for the same content in any key order and spacing', () => {
    const a = parseEvent(body());
    const b = parseEvent(`{ "data": {"signedBy":"front desk","carrier":"acme"}, "status":"delivered",
      "occurredAt":"2026-12-02T10:15:00Z", "shipmentId":"shp_1001", "id":"evt_42" }`);

    expect(a.ok && b.ok && a.value.contentHash === b.value.contentHash && a.value.body === b.value.body).toBe(true);
  });

  it('gives another hash when any content differs', () => {
    const a = parseEvent(body());
    const b = parseEvent(body({ data: { carrier: 'acme', signedBy: 'neighbour' } }));

    expect(a.ok && b.ok && a.value.contentHash !== b.value.contentHash).toBe(true);
  });

  it.each([
    ['not JSON', '{"id":', undefined, 'message body is not JSON'],
    ['a JSON array', '[1,2]', undefined, 'message body must be a JSON object'],
    ['a missing id', JSON.stringify({ ...valid, id: undefined }), 'id', 'id is required'],
    ['a missing status', JSON.stringify({ ...valid, status: undefined }), 'status', 'status is required'],
    ['an id with a space', body({ id: 'evt 42' }), 'id', /^id must be 1–128 characters/],
    ['an id of 129 characters', body({ id: 'e'.repeat(129) }), 'id', /^id /],
    ['an empty shipmentId', body({ shipmentId: '' }), 'shipmentId', 'shipmentId must not be empty'],
    ['a shipmentId with a control character', body({ shipmentId: 'shp\u0007' }), 'shipmentId', /printable/],
    ['an unknown status', body({ status: 'lost' }), 'status', /^status must be one of label_created/],
    ['a numeric status', body({ status: 3 }), 'status', /^status /],
    ['a date without a zone', body({ occurredAt: '2026-12-02T10:15:00' }), 'occurredAt', /with a zone/],
    ['an impossible date', body({ occurredAt: '2026-13-45T10:15:00Z' }), 'occurredAt', /real date-time/],
    ['data that is an array', body({ data: [1] }), 'data', /^data /],
    ['an unknown field', body({ priority: 'high' }), 'priority', 'priority is not a known field'],
  ])('refuses %s, naming the field', (_case, input, field, message) => {
    const result = parseEvent(input);

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.field).toBe(field);
    expect(result.error.message).toMatch(message);
  });

  it('refuses a __proto__ key at the top level and inside data', () => {
    const top = parseEvent(body().replace('{', '{"__proto__":{"polluted":true},'));
    const nested = parseEvent(body({ data: JSON.parse('{"__proto__":{"polluted":true}}') }).replace('"data":{}', '"data":{"__proto__":{"polluted":true}}'));

    expect(top.ok).toBe(false);
    expect(nested.ok).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a constructor key inside data', () => {
    const result = parseEvent(body({ data: { constructor: { prototype: 1 } } }));

    expect(result.ok).toBe(false);
  });

  it('refuses data nested deeper than 16 levels', () => {
    let data: unknown = 'leaf';
    for (let i = 0; i < 20; i++) data = { next: data };

    const result = parseEvent(body({ data }));

    expect(result.ok).toBe(false);
  });

  it('refuses a lone surrogate in data', () => {
    const result = parseEvent(body().replace('front desk', '\\ud800'));

    expect(result.ok).toBe(false);
  });

  it('refuses a body over the payload limit, keeping its readable id', () => {
    const result = parseEvent(body({ data: { blob: 'x'.repeat(2_000) } }), 1_024);

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.message).toMatch(/over the 1024-byte limit/);
    expect(result.error.eventId).toBe('evt_42');
  });

  it.each([
    ['+99:99'],
    ['-24:00'],
    ['+24:00'],
    ['+05:60'],
    ['+5:30'],
  ])('refuses the zone offset %s, naming occurredAt', (offset) => {
    const result = parseEvent(body({ occurredAt: `2026-12-02T10:15:00${offset}` }));

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.field).toBe('occurredAt');
    expect(result.error.message).toBe('occurredAt must be an ISO-8601 date-time with a zone (Z or ±hh:mm, at most ±23:59)');
  });

  it.each([['+23:59'], ['-23:59'], ['+00:00'], ['-00:00'], ['+05:45']])('accepts the zone offset %s', (offset) => {
    expect(parseEvent(body({ occurredAt: `2026-12-02T10:15:00${offset}` })).ok).toBe(true);
  });

  it.each([
    ['1e-400', 'data.reading', '{"reading":1e-400}'],
    ['0.1000000000000000055511151231257827', 'data.reading', '{"reading":0.1000000000000000055511151231257827}'],
    ['9007199254740993', 'data.reading', '{"reading":9007199254740993}'],
    ['1.00000000000000000001', 'data.readings.2', '{"readings":[1,2,1.00000000000000000001]}'],
    ['4.9e-325', 'data.nested.deep', '{"label":"4.9e-325","nested":{"deep":4.9e-325}}'],
  ])('refuses %s, a number whose value would change, naming its path', (_number, field, data) => {
    const result = parseEvent(body().replace(/"data":\{[^}]*\}/, `"data":${data}`));

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.field).toBe(field);
    expect(result.error.message).toBe(`${field} is a number that cannot be carried exactly (send it as a string)`);
    expect(result.error.eventId).toBe('evt_42');
  });

  it('respells numbers whose exact value it keeps: 1.0, 1e2, 2.50, -0, 1E-7 and 1e15 go out in their shortest form', () => {
    const raw = body().replace(/"data":\{[^}]*\}/, '"data":{"a":1.0,"b":1e2,"c":2.50,"d":-0,"e":1E-7,"f":1e15,"g":-0.0e3}');

    const result = parseEvent(raw);

    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.body).toContain('"data":{"a":1,"b":100,"c":2.5,"d":0,"e":1e-7,"f":1000000000000000,"g":0}');
    // The hash covers what the receiver gets: equal to the same event written in that form.
    const plain = parseEvent(body({ data: { a: 1, b: 100, c: 2.5, d: 0, e: 1e-7, f: 1e15, g: 0 } }));
    expect(plain.ok && plain.value.contentHash).toBe(result.value.contentHash);
  });

  it('leaves number-like strings alone, escaped quotes included', () => {
    const result = parseEvent(body({ data: { a: '1e-400', b: '"1e-400', c: '\\"0.10000000000000000001' } }));

    expect(result.ok).toBe(true);
  });

  it('bounds the body as sent: refuses one that fits the limit as received but not once its numbers are written out', () => {
    const raw = body({ data: {} }).replace('"data":{}', `"data":{"n":[${Array(40).fill('1e15').join(',')}]}`);
    const limit = Buffer.byteLength(raw) + 10;

    const result = parseEvent(raw, limit);

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.message).toMatch(new RegExp(`^message is \\d+ bytes as sent \\(numbers written out in full\\), over the ${limit}-byte limit$`));
    expect(result.error.eventId).toBe('evt_42');
  });

  it('keeps a readable id on an otherwise invalid message, and none when the id is invalid', () => {
    const withId = parseEvent(body({ status: 'lost' }));
    const withBadId = parseEvent(body({ id: 'evt 42', status: 'lost' }));

    expect(!withId.ok && withId.error.eventId).toBe('evt_42');
    expect(!withBadId.ok && withBadId.error.eventId).toBeUndefined();
  });
});

describe('Function: canonicalJson', () => {
  it('sorts keys at every level and drops undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: 0 }], c: undefined } })).toBe('{"a":{"d":[2,{"e":0,"f":1}]},"b":1}');
  });
});
