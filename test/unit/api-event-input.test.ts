import { describe, expect, it } from 'vitest';
import { eventTexts } from '../../api/routes/event-input';

describe('Function: eventTexts', () => {
  it("cuts each element of the batch's events out of the body as it was sent, spacing and spelling kept", () => {
    // Prepare
    const body = '{ "events" : [ {"id":"a","n":1.50} ,\n  {"id":"b","s":"x\\"]},{"} , 12345678901234567890, "text", [1,[2]] ] }';

    // Act
    const texts = eventTexts(body);

    // Assess
    expect(texts).toEqual(['{"id":"a","n":1.50}', '{"id":"b","s":"x\\"]},{"}', '12345678901234567890', '"text"', '[1,[2]]']);
  });

  it('reads the events member after others, and the last one when it is repeated, as JSON.parse keeps it', () => {
    // Prepare
    const body = '{"note":{"events":[{"id":"inner"}]},"events":[{"id":"first"}],"x":[1,2],"events":[{"id":"last"},{}]}';

    // Act
    const texts = eventTexts(body);

    // Assess
    expect(texts).toEqual(['{"id":"last"}', '{}']);
    expect(texts?.length).toBe((JSON.parse(body) as { events: unknown[] }).events.length);
  });

  it('finds no batch in a body without an events array', () => {
    // Act / Assess
    expect(eventTexts('{"id":"evt_1","status":"packed"}')).toBeUndefined();
    expect(eventTexts('{"events":"none"}')).toBeUndefined();
    expect(eventTexts('{"events":[{"id":"a"}],"events":null}')).toBeUndefined();
    expect(eventTexts('[{"events":[]}]')).toBeUndefined();
  });

  it('reads an empty batch and a key spelt with escapes', () => {
    // Act / Assess
    expect(eventTexts('{"events":[]}')).toEqual([]);
    expect(eventTexts('{"\\u0065vents":[ true , null ]}')).toEqual(['true', 'null']);
  });
});
