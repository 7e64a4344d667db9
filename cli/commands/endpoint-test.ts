/**
 * `handoff endpoint test` and `POST /v1/endpoints/{name}/test`: a signed `handoff.test` event
 * (lib/event.ts TEST_STATUS) to one endpoint alone, through the normal pipeline: on the delivery
 * queue as handoff's own message for that endpoint (sealed, lib/queue/seal.ts), then delivered by
 * the consumer as any delivery is (signed, retried, parked while the endpoint is disabled), and
 * followed with `handoff status EVENT_ID`. No subscriber of `*` gets it: only a sealed message
 * addresses one endpoint, and only handoff seals.
 */
import { randomUUID } from 'node:crypto';
import type { EndpointState } from '../../lib/endpoints/endpoint';
import { testEventBody, TEST_EVENT_TYPE } from '../../lib/event';
import type { CommandContext } from '../context';
import { checkName, requireEndpoint } from './endpoint-common';
import type { CommandResult } from './result';

/** Sends the test event; its ID, and the endpoint's state. @throws CommandFailedError (endpoint-not-found, no-seal-key) */
export async function sendTestEvent(ctx: CommandContext, name: string): Promise<{ eventId: string; state: EndpointState }> {
  const record = await requireEndpoint(ctx, name);
  const eventId = `test_${randomUUID().replace(/-/g, '')}`;
  await ctx.queue().enqueue(testEventBody(eventId, record.fields.name, ctx.now()), { endpoint: record.fields.name });
  return { eventId, state: record.state };
}

export async function endpointTestCommand(ctx: CommandContext, name: string): Promise<CommandResult> {
  const { eventId, state } = await sendTestEvent(ctx, checkName(name));
  return {
    json: { name, eventId },
    human: [
      `sent a ${TEST_EVENT_TYPE} event to endpoint ${name}: ${eventId}`,
      ...(state === 'disabled' ? [`endpoint ${name} is disabled: the event is parked until endpoint enable ${name}`] : []),
      `follow it: handoff status ${eventId}`,
    ].join('\n'),
  };
}
