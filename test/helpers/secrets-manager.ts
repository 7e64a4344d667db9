/**
 * A loopback stand-in for Secrets Manager's GetSecretValue, reached by the real SDK client through
 * `AWS_ENDPOINT_URL_SECRETS_MANAGER`: each secret answers its value (with the version's CreatedDate
 * and an AWSPREVIOUS version, for rotations), or fails the way Secrets Manager does: a 500, a
 * throttle, a KMS key the caller may not use, a key it cannot decrypt with, a deleted secret; or
 * never answers.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How Secrets Manager fails a GetSecretValue, on the wire (awsJson1_1: `__type` names the error). */
export const SECRETS_MANAGER_FAILURES = {
  'internal-error': { status: 500, type: 'InternalServiceError', message: 'An error occurred on the server side.' },
  throttled: { status: 400, type: 'ThrottlingException', message: 'Rate exceeded' },
  'kms-access-denied': { status: 400, type: 'AccessDeniedException', message: 'Access to KMS is not allowed' },
  'kms-decryption-failure': { status: 400, type: 'DecryptionFailure', message: "Secrets Manager can't decrypt the protected secret text using the provided KMS key." },
  deleted: { status: 400, type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret." },
} as const;
export type SecretsManagerFailure = keyof typeof SECRETS_MANAGER_FAILURES;

/** What a secret answers: its value (and a rotation), or a failure. */
export type SecretAnswer =
  | { readonly value: string; readonly createdAt?: Date; readonly previous?: string }
  | { readonly failure: SecretsManagerFailure }
  /** Never answers (the request is left open until the stub closes). */
  | { readonly hang: true };

export interface SecretsManagerStub {
  /** For `AWS_ENDPOINT_URL_SECRETS_MANAGER`. */
  readonly url: string;
  /** Every GetSecretValue asked: `<SecretId> <VersionStage or AWSCURRENT>`. */
  readonly calls: readonly string[];
  /** What `arn` answers from now on (unknown ARNs: `deleted`). */
  answer(arn: string, answer: SecretAnswer): void;
  close(): Promise<void>;
}

export async function startSecretsManagerStub(): Promise<SecretsManagerStub> {
  const answers = new Map<string, SecretAnswer>();
  const calls: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const { SecretId, VersionStage } = JSON.parse(body) as { SecretId: string; VersionStage?: string };
      calls.push(`${SecretId} ${VersionStage ?? 'AWSCURRENT'}`);
      const answer = answers.get(SecretId) ?? { failure: 'deleted' };
      const fail = (failure: { status: number; type: string; message: string }) => {
        res.writeHead(failure.status, { 'content-type': 'application/x-amz-json-1.1', 'x-amzn-errortype': failure.type });
        res.end(JSON.stringify({ __type: failure.type, message: failure.message }));
      };
      if ('hang' in answer) return;
      if ('failure' in answer) return fail(SECRETS_MANAGER_FAILURES[answer.failure]);
      if (VersionStage === 'AWSPREVIOUS' && answer.previous === undefined) {
        return fail({ status: 400, type: 'ResourceNotFoundException', message: "Secrets Manager can't find the specified secret value for staging label: AWSPREVIOUS" });
      }
      const value = VersionStage === 'AWSPREVIOUS' ? answer.previous : answer.value;
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(
        JSON.stringify({
          ARN: SecretId,
          Name: SecretId.split(':').at(-1),
          SecretString: value,
          VersionStages: [VersionStage ?? 'AWSCURRENT'],
          ...(answer.createdAt !== undefined && VersionStage === undefined ? { CreatedDate: answer.createdAt.getTime() / 1000 } : {}),
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    answer: (arn, answer) => void answers.set(arn, answer),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
