/**
 * The CDK context the infra tests synthesize with: cdk.json's (the recommended feature flags `cdk
 * init` writes for the installed aws-cdk-lib), so a test sees the template `cdk deploy` deploys from
 * this repository, with bundling skipped unless a test asks for it.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { WebhookDelivery, type WebhookDeliveryProps } from '../../infra/webhook-delivery';

/** cdk.json's `context`. */
export const CDK_CONTEXT = (JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> }).context;

/** An app with cdk.json's context, `context` over it; bundling skipped unless `bundle`. */
export function testApp(context: Record<string, unknown> = {}, options: { bundle?: boolean } = {}): App {
  return new App({ context: { ...CDK_CONTEXT, ...(options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] }), ...context } });
}

/**
 * How long a file's first synth may take: it loads aws-cdk-lib's modules, seconds on an idle
 * machine, a minute or more on a loaded one (three test files at once on two cores). Files warm up
 * in a `beforeAll` with this timeout, so no test's own 30 s pays for it.
 */
export const WARM_UP_MS = 240_000;

/** The Lambda entry the tests deploy in place of functions/consumer.ts (bundling is skipped). */
export const STAND_IN_ENTRY = fileURLToPath(new URL('./fixtures/consumer.ts', import.meta.url));

/** The webhook URL of a test deployment's default endpoint. */
export const WEBHOOK_URL = 'https://receiver.example.com/hooks';

/** A synthesized test deployment. */
export interface Built {
  readonly stack: Stack;
  readonly delivery: WebhookDelivery;
  readonly template: Template;
}

/** The construct in a stack of its own, with stand-in functions and the test webhook URL, `props` over them. */
export function buildDelivery(props: Partial<WebhookDeliveryProps> = {}): Built {
  const app = testApp();
  const stack = new Stack(app, 'TestStack');
  const delivery = new WebhookDelivery(stack, 'Delivery', {
    entry: STAND_IN_ENTRY,
    apiEntry: STAND_IN_ENTRY,
    ...props,
    settings: { webhookUrl: WEBHOOK_URL, ...props.settings },
  });
  return { stack, delivery, template: Template.fromStack(stack) };
}
