/**
 * The construct's tracing mode as the consumer reads it (`HANDOFF_TRACING`: infra/delivery/tracing.ts
 * sets it, lib/tracing/tracing.ts reads it). A module of its own, importing nothing: the construct's
 * entry (dist/cdk.js) takes the name from here without reaching any OpenTelemetry code.
 */
export const TRACING_ENV = 'HANDOFF_TRACING';
export const TRACING_MODES = ['xray', 'otlp', 'off'] as const;
export type TracingMode = (typeof TRACING_MODES)[number];
