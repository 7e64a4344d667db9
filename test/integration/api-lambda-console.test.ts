/**
 * The API Lambda's console (functions/api.ts) as a clone runs its source, where no build has put the
 * console's files beside it: /v1 answers all the same, every /console/ path answers 404 saying the
 * files are missing, logged once at cold start. The console's variables: portal links point at
 * `HANDOFF_PORTAL_CONSOLE_URL`, and a sign-in that is not JSON fails the cold start naming its variable.
 * (The package's api.mjs serving the built files: test/package/packed-install.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ApiEvent, ApiResult } from '../../api/http';
import { CONSOLE_ENV } from '../../console/site';
import { ConfigError } from '../../lib/errors';
import { apiEvent } from '../helpers/api-events';
import { apiFunctionEnvironment, SEAL_KEY_ARN, UNREACHED_RESOURCES } from '../helpers/api-function-environment';
import { startSecretsManagerStub, type SecretsManagerStub } from '../helpers/secrets-manager';
import { TEST_SEAL_KEY } from '../helpers/sqs-records';

const PORTAL_CONSOLE_URL = 'https://portal.example.com/console/';

/** The construct's environment, its resources named but never reached (no route here touches them). */
function functionEnvironment(secretsManager: string): Record<string, string> {
  return {
    ...apiFunctionEnvironment(UNREACHED_RESOURCES),
    [CONSOLE_ENV.portalConsoleUrl]: PORTAL_CONSOLE_URL,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
    AWS_ENDPOINT_URL_SECRETS_MANAGER: secretsManager,
  };
}

describe('functions/api.ts without the console in its bundle', () => {
  const saved = { ...process.env };
  let secrets: SecretsManagerStub;
  let handler: (event: ApiEvent) => Promise<ApiResult>;
  const coldStart: string[] = [];

  beforeAll(async () => {
    secrets = await startSecretsManagerStub();
    secrets.answer(SEAL_KEY_ARN, { value: TEST_SEAL_KEY });
    Object.assign(process.env, functionEnvironment(secrets.url));
    const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      coldStart.push(String(chunk));
      return true;
    });
    try {
      ({ handler } = await import('../../functions/api'));
    } finally {
      write.mockRestore();
    }
  });

  afterAll(async () => {
    process.env = saved;
    await secrets?.close();
  });

  it('logs once at cold start that the files are missing, and answers every /console/ path 404 saying so', async () => {
    const answers = await Promise.all(['/console/', '/console/app.js', '/console/config.json'].map((path) => handler(apiEvent({ method: 'GET', path, caller: null }))));

    expect(coldStart.filter((line) => line.includes('console files missing'))).toHaveLength(1);
    for (const answer of answers) {
      expect(answer.statusCode).toBe(404);
      expect(answer.headers?.['content-type']).toBe('text/plain; charset=utf-8');
      expect(answer.body).toMatch(/^The console's files are not in this function's bundle/);
    }
  });

  it('answers /v1 as ever', async () => {
    const answer = await handler(apiEvent({ method: 'GET', path: '/v1/openapi.json' }));

    expect(answer.statusCode).toBe(200);
  });

  it('signs portal links that point at HANDOFF_PORTAL_CONSOLE_URL', async () => {
    const answer = await handler(apiEvent({ method: 'POST', path: '/v1/portal-links', body: { owner: 'acme-corp' } }));

    expect(answer.statusCode).toBe(201);
    const link = JSON.parse(answer.body!) as { url: string; token: string };
    expect(link.url).toBe(`${PORTAL_CONSOLE_URL}#portal=${link.token}`);
  });

  it('fails the cold start naming HANDOFF_CONSOLE_SIGN_IN when it is not the sign-in as JSON', async () => {
    vi.resetModules();
    process.env[CONSOLE_ENV.signIn] = '{"issuer": "https://login.example.com"';

    const failure = await import('../../functions/api').then(
      () => undefined,
      (error: unknown) => error,
    );
    delete process.env[CONSOLE_ENV.signIn];

    // The module graph was loaded anew: its ConfigError is another class of the same name.
    expect(failure).toMatchObject({ name: ConfigError.name, code: 'invalid-setting', variable: CONSOLE_ENV.signIn });
    expect((failure as Error).message).toMatch(new RegExp(`^${CONSOLE_ENV.signIn} must hold the console's sign-in as JSON`));
  });
});
