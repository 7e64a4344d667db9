/**
 * `handoff/client`: the typed client of the management API (docs/api-client.md). Everything here
 * is the entry's public surface; the rest of api/client/ is its inside.
 */
export { HandoffClient } from './client';
export type { AwsCredentialsProvider, BearerCredentials, CallOptions, HandoffClientOptions, HandoffCredentials } from './client';
export { HandoffApiError, HandoffClientConfigError, HandoffConnectionError } from './errors';
export type { ApiFieldError, ProblemDocument } from './errors';
export type { AwsCredentials, Query, QueryValue } from './request';
export type * from './types';
