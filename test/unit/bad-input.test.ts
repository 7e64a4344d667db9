import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PAYLOAD_LIMIT_BYTES, parseEvent } from '../../lib/event';
import { InvalidEventError } from '../../lib/errors';
import { BAD_INPUT_CORPUS, sqsCanCarry } from '../fixtures/bad-input/corpus';

const invalidCases = BAD_INPUT_CORPUS.filter((c) => c.reason === 'invalid');
const conflictCases = BAD_INPUT_CORPUS.filter((c) => c.reason === 'identity-conflict');

describe('Fixture: the bad-input corpus', () => {
  it('holds at least 30 distinct malformed messages, identity conflicts among them', () => {
    const names = new Set(BAD_INPUT_CORPUS.map((c) => c.name));
    const bodies = new Set(BAD_INPUT_CORPUS.map((c) => c.body));

    expect(BAD_INPUT_CORPUS.length).toBeGreaterThanOrEqual(30);
    expect(names.size).toBe(BAD_INPUT_CORPUS.length);
    expect(bodies.size).toBe(BAD_INPUT_CORPUS.length);
    expect(conflictCases.length).toBeGreaterThanOrEqual(2);
  });

  it('keeps every readable event ID distinct, so cases never meet in one ledger', () => {
    const ids = BAD_INPUT_CORPUS.flatMap((c) => (c.eventId === undefined ? [] : [c.eventId]));

    expect(new Set(ids).size).toBe(ids.length);
  });

  it('holds only bodies SQS can carry, but for the two that show the parser copes without it', () => {
    const notCarried = BAD_INPUT_CORPUS.filter((c) => !sqsCanCarry(c.body)).map((c) => c.name);

    expect(notCarried).toEqual(['an empty body', 'a raw (unescaped) lone surrogate in data']);
  });
});

describe('Function: parseEvent, on the bad-input corpus', () => {
  it.each(invalidCases)('refuses $name, never throwing', (badInput) => {
    // Act
    const result = parseEvent(badInput.body);

    // Assess
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toBeInstanceOf(InvalidEventError);
    expect(result.error.code).toBe('invalid');
    expect(result.error.field).toBe(badInput.field);
    expect(result.error.eventId).toBe(badInput.eventId);
    if (badInput.field !== undefined) expect(result.error.message.startsWith(`${badInput.field} `)).toBe(true);
    if (badInput.messageIncludes !== undefined) expect(result.error.message).toContain(badInput.messageIncludes);
  });

  it.each(conflictCases)('accepts $name on its own, with the admitted ID and another content hash', (badInput) => {
    // Prepare
    const admitted = parseEvent(badInput.admittedFirst ?? '');

    // Act
    const result = parseEvent(badInput.body);

    // Assess: each is a valid event; only the ledger, which has seen the first, can tell.
    expect(admitted.ok && result.ok).toBe(true);
    if (!admitted.ok || !result.ok) return;
    expect(result.value.event.id).toBe(badInput.eventId);
    expect(admitted.value.event.id).toBe(badInput.eventId);
    expect(result.value.contentHash).not.toBe(admitted.value.contentHash);
  });

  it('admits the event every invalid message with an admittedFirst reuses the ID of', () => {
    const firsts = invalidCases.flatMap((c) => (c.admittedFirst === undefined ? [] : [c.admittedFirst]));

    const results = firsts.map((body) => parseEvent(body).ok);

    expect(results.length).toBeGreaterThanOrEqual(1);
    expect(results.every(Boolean)).toBe(true);
  });

  it('leaves Object.prototype untouched after the whole corpus', () => {
    for (const badInput of BAD_INPUT_CORPUS) parseEvent(badInput.body);

    expect(Object.prototype).not.toHaveProperty('polluted');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('accepts the over-limit event once it is one byte shorter: the limit is inclusive', () => {
    // Prepare: the fixture is an otherwise valid event of exactly limit + 1 bytes, padded with x.
    const overByOne = readFileSync(new URL('../fixtures/bad-input/over-limit-by-one-byte.json', import.meta.url), 'utf8');
    const atLimit = overByOne.replace('xx"', 'x"');

    // Act
    const over = parseEvent(overByOne);
    const at = parseEvent(atLimit);

    // Assess
    expect(Buffer.byteLength(overByOne)).toBe(DEFAULT_PAYLOAD_LIMIT_BYTES + 1);
    expect(Buffer.byteLength(atLimit)).toBe(DEFAULT_PAYLOAD_LIMIT_BYTES);
    expect(over.ok).toBe(false);
    expect(at.ok).toBe(true);
  });

  it('refuses a valid event over a smaller configured limit, keeping its readable ID', () => {
    const body = JSON.stringify({
      id: 'evt_small_limit',
      shipmentId: 'shp_1001',
      status: 'packed',
      occurredAt: '2026-12-02T10:15:00Z',
      data: { notes: 'x'.repeat(300) },
    });

    const result = parseEvent(body, 256);

    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.message).toBe(`message is ${Buffer.byteLength(body)} bytes, over the 256-byte limit`);
    expect(result.error.field).toBeUndefined();
    expect(result.error.eventId).toBe('evt_small_limit');
  });
});
