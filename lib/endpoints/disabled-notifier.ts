/**
 * The notice of an endpoint the consumer disabled (docs/contract.md §12), beyond the log line: an
 * EventBridge event and a message to the operators' alarm topic.
 */

/** What operators are told when the consumer disables an endpoint. */
export interface DisabledNotice {
  readonly endpoint: string;
  readonly reason: string;
  /** Failed attempts recorded (for a 410: those before it). */
  readonly failures: number;
  /** ISO time since which it accepted no request, when known. */
  readonly since: string | null;
  /** ISO time of the disabling. */
  readonly at: string;
}

/** The event an endpoint's disabling is published as on EventBridge. */
export const DISABLED_EVENT = { source: 'handoff', detailType: 'handoff.endpoint.disabled' } as const;

export interface NoticeTargets {
  /** The EventBridge bus (the construct: `default`). */
  readonly eventBus?: string | undefined;
  /** The operators' SNS alarm topic. */
  readonly alarmTopicArn?: string | undefined;
  /** The clients' settings (tests: a stub's endpoint); Lambda's own by default. */
  readonly clientConfig?: { readonly region?: string; readonly endpoint?: string; readonly credentials?: { accessKeyId: string; secretAccessKey: string } };
}

/**
 * Tells operators of an endpoint the consumer disabled, beyond the log line: an event on the bus
 * (source `handoff`, detail-type `handoff.endpoint.disabled`, detail {endpoint, reason, failures,
 * since, at}) and a message to the alarm topic, each where set; undefined when neither is. The SDK
 * clients are loaded only when a notice is sent. Rejects when either send fails (after trying both).
 */
export function disabledNotifier(targets: NoticeTargets): ((notice: DisabledNotice) => Promise<void>) | undefined {
  const { eventBus, alarmTopicArn } = targets;
  if (eventBus === undefined && alarmTopicArn === undefined) return undefined;
  const config = { ...targets.clientConfig };
  return async (notice) => {
    const sends: Promise<unknown>[] = [];
    if (eventBus !== undefined) {
      sends.push(
        import('@aws-sdk/client-eventbridge').then(async ({ EventBridgeClient, PutEventsCommand }) => {
          const client = new EventBridgeClient(config);
          try {
            const { FailedEntryCount, Entries } = await client.send(
              new PutEventsCommand({
                Entries: [{ EventBusName: eventBus, Source: DISABLED_EVENT.source, DetailType: DISABLED_EVENT.detailType, Detail: JSON.stringify(notice) }],
              }),
            );
            if (FailedEntryCount) throw new Error(`EventBridge refused the event: ${Entries?.[0]?.ErrorCode ?? 'unknown error'}`);
          } finally {
            client.destroy();
          }
        }),
      );
    }
    if (alarmTopicArn !== undefined) {
      sends.push(
        import('@aws-sdk/client-sns').then(async ({ SNSClient, PublishCommand }) => {
          const client = new SNSClient(config);
          try {
            await client.send(
              new PublishCommand({
                TopicArn: alarmTopicArn,
                Subject: `handoff: endpoint ${notice.endpoint} disabled`.slice(0, 100),
                Message: JSON.stringify({ event: DISABLED_EVENT.detailType, ...notice }),
              }),
            );
          } finally {
            client.destroy();
          }
        }),
      );
    }
    const failure = (await Promise.allSettled(sends)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failure !== undefined) throw failure.reason;
  };
}
