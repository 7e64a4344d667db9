/**
 * handoff's own test event (lib/event.ts TEST_STATUS, type `handoff.test`): read as an event only
 * in a sealed message (handoff's own, to one endpoint), invalid in a producer's as any unknown
 * status is, and never routed to subscribers, even of every type.
 */
import { describe, expect, it } from 'vitest';
import { subscribes } from '../../lib/endpoints/endpoint';
import { parseEvent, TEST_EVENT_TYPE, testEventBody } from '../../lib/event';

const NOW_MS = Date.parse('2026-12-05T00:00:00Z');

describe('Function: testEventBody', () => {
  it('is a canonical event of its own shipment, naming the endpoint', () => {
    // Act
    const body = testEventBody('test_1', 'acme', NOW_MS);

    // Assess
    expect(body).toBe('{"data":{"endpoint":"acme","type":"handoff.test"},"id":"test_1","occurredAt":"2026-12-05T00:00:00.000Z","shipmentId":"handoff.test:test_1","status":"test"}');
  });
});

describe('Function: parseEvent, the test event', () => {
  it('reads it from a sealed message, of type handoff.test', () => {
    // Act
    const parsed = parseEvent(testEventBody('test_1', 'acme', NOW_MS), undefined, { sealed: true });

    // Assess
    expect(parsed.ok).toBe(true);
    if (parsed.ok) {
      expect(parsed.value.type).toBe(TEST_EVENT_TYPE);
      expect(parsed.value.event.status).toBe('test');
    }
  });

  it("refuses it in a producer's message as it refuses any status not a shipment's", () => {
    // Act
    const parsed = parseEvent(testEventBody('test_1', 'acme', NOW_MS));
    const unknown = parseEvent(JSON.stringify({ id: 'evt_1', shipmentId: 's', status: 'lost', occurredAt: '2026-12-05T00:00:00Z' }));

    // Assess
    expect(parsed.ok).toBe(false);
    expect(unknown.ok).toBe(false);
    if (!parsed.ok && !unknown.ok) {
      expect(parsed.error.message).toBe(unknown.error.message);
      expect(parsed.error.field).toBe('status');
      expect(parsed.error.eventId).toBe('test_1');
    }
  });
});

describe('Function: subscribes, the test event', () => {
  it('routes it to no subscriber, even of every type', () => {
    // Prepare
    const parsed = parseEvent(testEventBody('test_1', 'acme', NOW_MS), undefined, { sealed: true });
    if (!parsed.ok) throw parsed.error;

    // Act / Assess
    expect(subscribes({ eventTypes: ['*'], match: {} }, parsed.value.event)).toBe(false);
  });
});
