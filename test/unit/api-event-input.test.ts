import { describe, expect, it } from 'vitest';
import { eventTexts } from '../../api/routes/event-input';
import { sqsReason } from '../../api/routes/events';

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

describe('Function: sqsReason', () => {
  it("keeps SQS's reason for an entry it refused, with the ARNs it names left out and its text inert", () => {
    expect(sqsReason('InvalidParameterValue', 'Message must be shorter than 1024 bytes.')).toBe('InvalidParameterValue: Message must be shorter than 1024 bytes.');
    expect(
      sqsReason(
        'AccessDenied',
        'User: arn:aws:sts::123456789012:assumed-role/handoff-api/fn is not authorized to perform: sqs:sendmessage on resource: arn:aws:sqs:eu-west-1:123456789012:handoff-deliveries',
      ),
    ).toBe('AccessDenied: User: (an ARN) is not authorized to perform: sqs:sendmessage on resource: (an ARN)');
    expect(sqsReason('Odd', 'a\u001b[2Jb')).toBe('Odd: a?[2Jb');
    expect(sqsReason('Empty', '')).toBe('Empty');
  });
});
