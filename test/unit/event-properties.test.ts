/**
 * Properties of the message parser (docs/contract.md §2): whatever arrives, parseEvent answers with a value
 * and never throws; a valid event's identity (its canonical body and hash) depends on its
 * content only, not on how the producer spelled the JSON.
 */
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../helpers/prng';
import {
  canonicalJson,
  DEFAULT_PAYLOAD_LIMIT_BYTES,
  parseEvent,
  SHIPMENT_STATUSES,
  type ParseResult,
} from '../../lib/event';
import { InvalidEventError } from '../../lib/errors';

const KNOWN_FIELDS = ['id', 'shipmentId', 'status', 'occurredAt', 'data'] as const;
const FORBIDDEN_KEYS = ['__proto__', 'constructor', 'prototype'];
const ID_ALPHABET = /^[A-Za-z0-9_\-.:]+$/;

// ---- Arbitraries -------------------------------------------------------------------------

/** Any UTF-16 code unit, lone surrogates and control characters included. */
const anyCodeUnit = fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code));
const anyString = fc.string({ unit: anyCodeUnit, maxLength: 200 });

const eventId = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_\-.:]{1,40}$/),
  fc.constantFrom('a', 'e'.repeat(128), 'evt_42', 'urn:evt:1.2-3_x'),
);
/** 1–128 printable characters, not blank, well-formed (unit `binary` has no lone surrogates). */
const shipmentId = fc.oneof(
  fc
    .string({ unit: 'binary', minLength: 1, maxLength: 64 })
    .filter((s) => !/[\p{C}\p{Zl}\p{Zp}]/u.test(s) && s.trim().length > 0),
  fc.constant('s'.repeat(128)),
);
/** An ISO-8601 date-time with a zone: `Z` or an offset, with or without seconds and fractions. */
const occurredAt = fc
  .record({
    epochMs: fc.integer({ min: Date.UTC(1000, 0, 2), max: Date.UTC(9998, 11, 30) }),
    offsetMinutes: fc.integer({ min: -56, max: 56 }).map((quarters) => quarters * 15),
    precision: fc.constantFrom('minutes', 'seconds', 'millis'),
    zulu: fc.boolean(),
  })
  .map(({ epochMs, offsetMinutes, precision, zulu }) => {
    const offset = zulu ? 0 : offsetMinutes;
    const local = new Date(epochMs + offset * 60_000).toISOString(); // yyyy-mm-ddThh:mm:ss.sssZ
    const time = precision === 'minutes' ? local.slice(0, 16) : precision === 'seconds' ? local.slice(0, 19) : local.slice(0, 23);
    const sign = offset < 0 ? '-' : '+';
    const hh = String(Math.floor(Math.abs(offset) / 60)).padStart(2, '0');
    const mm = String(Math.abs(offset) % 60).padStart(2, '0');
    return `${time}${zulu ? 'Z' : `${sign}${hh}:${mm}`}`;
  });

/** JSON values whose numbers survive a parse exactly (integers within ±2^53; no overflow). */
const jsonValue = fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' }).filter((v) => !hasInexactNumber(v));
/** Carrier details: any JSON object a producer may send, free of keys no event may hold. */
const data = fc
  .dictionary(fc.string({ unit: 'binary', maxLength: 12 }), jsonValue, { maxKeys: 6 })
  .filter((d) => !hasForbiddenKey(d));

type EventShape = { id: string; shipmentId: string; status: string; occurredAt: string; data?: Record<string, unknown> };
const validEvent: fc.Arbitrary<EventShape> = fc.record(
  { id: eventId, shipmentId, status: fc.constantFrom(...SHIPMENT_STATUSES), occurredAt, data },
  { requiredKeys: ['id', 'shipmentId', 'status', 'occurredAt'] },
);

// ---- Helpers -----------------------------------------------------------------------------

function hasInexactNumber(value: unknown): boolean {
  if (typeof value === 'number') return !Number.isFinite(value) || (Number.isInteger(value) && !Number.isSafeInteger(value));
  if (value === null || typeof value !== 'object') return false;
  return Object.values(value).some(hasInexactNumber);
}

function hasForbiddenKey(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(hasForbiddenKey);
  return Object.entries(value).some(([k, v]) => FORBIDDEN_KEYS.includes(k) || hasForbiddenKey(v));
}

/** Parses, failing the property (rather than the process) on a throw. */
function parseNeverThrowing(body: string): ParseResult {
  let result: ParseResult | undefined;
  expect(() => {
    result = parseEvent(body);
  }).not.toThrow();
  return result as ParseResult;
}

/** Both spellings of an event are accepted, to the same body and the same hash. */
function expectSameBodyAndHash(spelling: string, respelling: string): void {
  // Act
  const a = parseNeverThrowing(spelling);
  const b = parseNeverThrowing(respelling);

  // Assess
  expect(a.ok && b.ok).toBe(true);
  if (!a.ok || !b.ok) return;
  expect(b.value.body).toBe(a.value.body);
  expect(b.value.contentHash).toBe(a.value.contentHash);
}

/** A refusal is an InvalidEventError whose message starts with the field it names. */
function expectWellFormedRefusal(result: ParseResult): void {
  if (result.ok) return;
  expect(result.error).toBeInstanceOf(InvalidEventError);
  expect(result.error.code).toBe('invalid');
  if (result.error.field !== undefined) expect(result.error.message.startsWith(`${result.error.field} `)).toBe(true);
  if (result.error.eventId !== undefined) expect(result.error.eventId).toMatch(ID_ALPHABET);
}


/**
 * The same JSON value, spelled another way: keys shuffled at every level, whitespace between
 * tokens, and some string characters written as `\uXXXX` escapes.
 */
function respell(value: unknown, random: () => number): string {
  const ws = () => [' ', '\n', '\t', '\r\n', ''][Math.floor(random() * 5)] ?? '';
  const str = (s: string) =>
    `"${[...JSON.stringify(s).slice(1, -1).matchAll(/\\u[0-9a-f]{4}|\\.|[\s\S]/g)]
      .map(([token]) => {
        if (token.length > 1 || random() < 0.7) return token;
        // Escape each UTF-16 unit separately: a pair written as two escapes is still one character.
        return [...Array.from({ length: token.length }, (_, i) => token.charCodeAt(i))]
          .map((code) => `\\u${code.toString(16).padStart(4, '0')}`)
          .join('');
      })
      .join('')}"`;
  const go = (v: unknown): string => {
    if (typeof v === 'string') return str(v);
    if (v === null || typeof v !== 'object') return JSON.stringify(v);
    if (Array.isArray(v)) return `[${ws()}${v.map((item) => `${go(item)}${ws()}`).join(`,${ws()}`)}]`;
    const keys = Object.keys(v).sort(() => random() - 0.5);
    const members = keys.map((k) => `${ws()}${str(k)}${ws()}:${ws()}${go((v as Record<string, unknown>)[k])}${ws()}`);
    return `{${members.join(',')}}`;
  };
  return `${ws()}${go(value)}${ws()}`;
}

/** The value a receiver reads from a body: what "the same content" means. */
const contentOf = (body: string): unknown => JSON.parse(body);

// ---- Properties --------------------------------------------------------------------------

describe('Function: parseEvent (properties)', () => {
  it('never throws on arbitrary strings, lone surrogates and control characters included', () => {
    fc.assert(
      fc.property(fc.oneof(anyString, fc.string({ unit: 'binary', maxLength: 300 })), (body) => {
        const result = parseNeverThrowing(body);

        expectWellFormedRefusal(result);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on arbitrary JSON values, and refuses every one that is not an object', () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: anyCodeUnit }), (value) => {
        const result = parseNeverThrowing(JSON.stringify(value));

        expectWellFormedRefusal(result);
        const isObject = typeof value === 'object' && value !== null && !Array.isArray(value);
        if (!isObject) expect(!result.ok && result.error.message).toBe('message body must be a JSON object');
      }),
      { numRuns: 300 },
    );
  });

  it('never throws on objects mixing the known fields with values of any type', () => {
    const anyValue = fc.oneof(jsonValue, fc.jsonValue({ stringUnit: anyCodeUnit, maxDepth: 2 }));
    const mixed = fc.record(
      {
        id: fc.oneof(eventId, anyValue),
        shipmentId: fc.oneof(shipmentId, anyValue),
        status: fc.oneof(fc.constantFrom(...SHIPMENT_STATUSES), anyValue),
        occurredAt: fc.oneof(occurredAt, anyValue),
        data: fc.oneof(data, anyValue),
      },
      { requiredKeys: [] },
    );

    fc.assert(
      fc.property(mixed, (value) => {
        const result = parseNeverThrowing(JSON.stringify(value));

        expectWellFormedRefusal(result);
      }),
      { numRuns: 500 },
    );
  });

  it('never throws on mutated valid events, and what it still accepts round-trips', () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('drop-field' as const), field: fc.constantFrom(...KNOWN_FIELDS) }),
      fc.record({ kind: fc.constant('set-field' as const), field: fc.constantFrom(...KNOWN_FIELDS, ...FORBIDDEN_KEYS), value: jsonValue }),
      fc.record({ kind: fc.constant('insert-char' as const), at: fc.nat(), char: anyCodeUnit }),
      fc.record({ kind: fc.constant('delete-char' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
    );

    fc.assert(
      fc.property(validEvent, mutation, (event, m) => {
        // Prepare
        const original = JSON.stringify(event);
        const at = 'at' in m ? m.at % (original.length + 1) : 0;
        const body = (() => {
          switch (m.kind) {
            case 'drop-field': {
              const { [m.field]: _dropped, ...rest } = event;
              return JSON.stringify(rest);
            }
            case 'set-field':
              // A computed key defines an own property, even for `__proto__`.
              return JSON.stringify({ ...event, [m.field]: m.value });
            case 'insert-char':
              return original.slice(0, at) + m.char + original.slice(at);
            case 'delete-char':
              return original.slice(0, at) + original.slice(at + 1);
            case 'truncate':
              return original.slice(0, at);
          }
        })();

        // Act
        const result = parseNeverThrowing(body);

        // Assess
        expectWellFormedRefusal(result);
        if (result.ok) {
          const again = parseEvent(result.value.body);
          expect(again.ok && again.value.contentHash).toBe(result.value.contentHash);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('accepts every valid event, and its canonical body parses back to the same body and hash', () => {
    fc.assert(
      fc.property(validEvent, (event) => {
        const body = JSON.stringify(event);
        fc.pre(Buffer.byteLength(body) <= DEFAULT_PAYLOAD_LIMIT_BYTES);

        const first = parseNeverThrowing(body);
        expect(first.ok).toBe(true);
        if (!first.ok) return;
        const second = parseNeverThrowing(first.value.body);

        expect(first.value.body).toBe(canonicalJson(contentOf(body)));
        expect(first.value.type).toBe(`shipment.${event.status}`);
        expect(second.ok && second.value.body).toBe(first.value.body);
        expect(second.ok && second.value.contentHash).toBe(first.value.contentHash);
        expect(isDeepStrictEqual(contentOf(first.value.body), contentOf(body))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('gives the same body and hash whatever the key order, whitespace and string escapes', () => {
    fc.assert(
      fc.property(validEvent, fc.integer(), (event, seed) => {
        // Prepare
        const plain = JSON.stringify(event);
        const respelled = respell(event, mulberry32(seed));
        expect(contentOf(respelled)).toEqual(contentOf(plain));

        expectSameBodyAndHash(plain, respelled);
      }),
      { numRuns: 300 },
    );
  });

  it('gives another hash whenever the content differs', () => {
    const change = fc.oneof(
      fc.record({ field: fc.constant('shipmentId' as const), value: shipmentId }),
      fc.record({ field: fc.constant('status' as const), value: fc.constantFrom(...SHIPMENT_STATUSES) }),
      fc.record({ field: fc.constant('occurredAt' as const), value: occurredAt }),
      fc.record({ field: fc.constant('data' as const), value: fc.option(data, { nil: undefined }) }),
    );

    fc.assert(
      fc.property(validEvent, change, (event, { field, value }) => {
        // Prepare: the same ID with one field changed (or, for data, possibly removed).
        const changed: EventShape = { ...event, [field]: value };
        if (value === undefined) delete changed.data;
        const [before, after] = [JSON.stringify(event), JSON.stringify(changed)];
        fc.pre(!isDeepStrictEqual(contentOf(before), contentOf(after)));

        // Act
        const a = parseNeverThrowing(before);
        const b = parseNeverThrowing(after);

        // Assess
        expect(a.ok && b.ok).toBe(true);
        if (!a.ok || !b.ok) return;
        expect(b.value.contentHash).not.toBe(a.value.contentHash);
        expect(b.value.body).not.toBe(a.value.body);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses any unknown top-level key, naming it', () => {
    const unknownKey = fc
      .oneof(fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }), fc.constantFrom('type', 'ID', 'Status', 'eventId', 'toString'))
      .filter((k) => !(KNOWN_FIELDS as readonly string[]).includes(k));

    fc.assert(
      // Values free of forbidden keys, which would be refused first, under a longer path.
      fc.property(validEvent, unknownKey, jsonValue.filter((v) => !hasForbiddenKey(v)), (event, key, value) => {
        const body = JSON.stringify({ ...event, [key]: value });

        const result = parseNeverThrowing(body);

        expect(result.ok).toBe(false);
        if (result.ok) return;
        expect(result.error.field).toBe(key);
        expect(result.error.eventId).toBe(event.id);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses an empty unknown top-level key, keeping the readable ID', () => {
    const result = parseEvent(JSON.stringify({ id: 'evt_1', shipmentId: 's', status: 'packed', occurredAt: '2026-12-02T10:15:00Z', '': 1 }));

    expect(result.ok).toBe(false);
    expect(!result.ok && result.error.eventId).toBe('evt_1');
  });

  it('refuses any id outside the alphabet or the 1–128 length, reading no event ID from it', () => {
    const badId = fc.oneof(
      // At least one character outside A-Z a-z 0-9 _ - . :
      fc
        .tuple(fc.stringMatching(/^[A-Za-z0-9_\-.:]{0,20}$/), anyCodeUnit, fc.stringMatching(/^[A-Za-z0-9_\-.:]{0,20}$/))
        .filter(([, c]) => !ID_ALPHABET.test(c))
        .map(([a, c, b]) => a + c + b),
      fc.constant(''),
      fc.stringMatching(/^[A-Za-z0-9_\-.:]{129,200}$/),
    );

    fc.assert(
      fc.property(validEvent, badId, (event, id) => {
        const result = parseNeverThrowing(JSON.stringify({ ...event, id }));

        expect(result.ok).toBe(false);
        if (result.ok) return;
        expect(result.error.field).toBe('id');
        expect(result.error.eventId).toBeUndefined();
      }),
      { numRuns: 500 },
    );
  });

  describe('numbers', () => {
    /** Doubles a JSON body can carry: finite, and integers only within ±2^53. */
    const carried = fc
      .double({ noNaN: true, noDefaultInfinity: true })
      .filter((d) => Number.isFinite(d) && (!Number.isInteger(d) || Number.isSafeInteger(d)));

    /** `d`'s shortest spelling as [sign, digits, exponent]: the value is sign digits × 10^exponent. */
    function decimal(d: number): [string, string, number] {
      const [, sign = '', whole = '', fraction = '', exponent = '0'] = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(
        JSON.stringify(d),
      )!;
      return [sign, `${whole}${fraction}`.replace(/^0+(?=\d)/, ''), Number(exponent) - fraction.length];
    }

    /** sign digits × 10^exponent in JSON's scientific form, one digit before the point. */
    function scientific(sign: string, digits: string, exponent: number, upper = false): string {
      const point = digits.length > 1 ? `.${digits.slice(1)}` : '';
      return `${sign}${digits[0]}${point}${upper ? 'E' : 'e'}${exponent + digits.length - 1}`;
    }

    const withNumber = (literal: string) =>
      `{"id":"evt_n","shipmentId":"shp_1","status":"packed","occurredAt":"2026-12-02T10:15:00Z","data":{"n":${literal}}}`;

    it('respells a number with the same exact value (trailing zeros, another exponent) to the same body and hash', () => {
      fc.assert(
        fc.property(carried, fc.integer({ min: 0, max: 6 }), fc.boolean(), (d, zeros, upper) => {
          // Prepare: the same value with `zeros` more digits and an exponent `zeros` lower
          const [sign, digits, exponent] = decimal(d);
          const respelled = scientific(sign, `${digits}${'0'.repeat(zeros)}`, exponent - zeros, upper);

          expectSameBodyAndHash(withNumber(JSON.stringify(d)), withNumber(respelled));
        }),
        { numRuns: 500 },
      );
    });

    it('refuses a number whose value would change on the way, naming its path', () => {
      fc.assert(
        fc.property(carried, fc.integer({ min: 0, max: 10 }), fc.integer({ min: 1, max: 9 }), (d, zeros, tail) => {
          // A digit past the double's precision: the source's decimal value is not the double's.
          const [sign, digits, exponent] = decimal(d);
          const more = `${'0'.repeat(17 + zeros - Math.min(digits.length, 17))}${tail}`;
          fc.pre(digits !== '0');
          const literal = scientific(sign, `${digits}${more}`, exponent - more.length);

          const result = parseNeverThrowing(withNumber(literal));

          expect(result.ok).toBe(false);
          if (result.ok) return;
          expect(result.error.field).toBe('data.n');
          expect(result.error.message).toBe('data.n is a number that cannot be carried exactly (send it as a string)');
        }),
        { numRuns: 500 },
      );
    });
  });
});
