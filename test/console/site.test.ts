/**
 * The console's build and how it is served (console/build.ts, console/site.ts), without a browser:
 * the files esbuild makes and what it refuses, and every answer of the site (paths, methods,
 * headers, ETag and gzip), with the sign-in's configuration read from the environment.
 */
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import type { ApiEvent, ApiResult } from '../../api/http';
import { buildConsole, ConsoleBuildError, describeSizes, writeConsoleFiles } from '../../console/build';
import {
  CONSOLE_ENV,
  consoleConfigFromEnvironment,
  consoleFile,
  consoleSite,
  contentSecurityPolicy,
  portalConsoleUrlFromEnvironment,
  readConsoleFiles,
  withConsole,
  type ConsoleFile,
} from '../../console/site';
import { ConfigError } from '../../lib/errors';
import { apiEvent } from '../helpers/api-events';

const SIGN_IN = { issuer: 'https://login.example.com/tenant', clientId: 'console', scopes: ['openid', 'handoff/read'], tokenUrl: 'https://auth.example.net/oauth2/token' };

function request(method: string, path: string, headers: Record<string, string> = {}, query: Record<string, string> = {}): ApiEvent {
  return apiEvent({ method, path, headers, query, caller: null });
}

const FILES: ConsoleFile[] = [
  consoleFile('index.html', Buffer.from('<!doctype html><link rel="stylesheet" href="app.css"><script type="module" src="app.js"></script>')),
  consoleFile('app.js', Buffer.from(`console.log(${JSON.stringify('x'.repeat(2000))});`)),
  consoleFile('app.css', Buffer.from('body{margin:0}')),
];

const temporary: string[] = [];
afterAll(() => {
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

/** A page's sources in a temporary directory, for the build to refuse. */
function appDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'handoff-console-app-'));
  temporary.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const INDEX = '<!doctype html><link rel="stylesheet" href="app.css"><script type="module" src="app.js"></script>';

describe('buildConsole', () => {
  it('bundles the page into index.html, app.js and app.css, each with a strong ETag and its gzipped body', { timeout: 30_000 }, async () => {
    const files = await buildConsole();

    expect(files.map((file) => [file.path, file.contentType])).toEqual([
      ['index.html', 'text/html; charset=utf-8'],
      ['app.js', 'text/javascript; charset=utf-8'],
      ['app.css', 'text/css; charset=utf-8'],
    ]);
    for (const file of files) {
      expect(file.etag).toMatch(/^"[A-Za-z0-9_-]{22}"$/);
      expect(gunzipSync(file.gzip!).equals(file.body)).toBe(true);
    }
    // Preact and its JSX runtime are inside the bundle, not imported.
    const script = files.find((file) => file.path === 'app.js')!.body.toString('utf8');
    expect(script).not.toMatch(/from\s*["']preact/);
    expect(describeSizes(files).at(-1)).toMatch(/^total\s+[\d.]+ KB\s+\([\d.]+ KB gzipped\)$/);
  });

  it('bundles a stylesheet index.html links when the script does not import it', async () => {
    const dir = appDir({ 'index.html': INDEX, 'main.tsx': 'document.title = "t";', 'styles.css': 'body { color: red }' });

    const files = await buildConsole(dir);

    expect(files.map((file) => file.path)).toEqual(['index.html', 'app.js', 'app.css']);
    expect(files[2]!.body.toString('utf8')).toContain('color:red');
  });

  it('refuses a stylesheet that would load from another origin', async () => {
    const dir = appDir({ 'index.html': INDEX, 'main.tsx': 'import "./styles.css";', 'styles.css': 'body { background: url(https://cdn.example/bg.png) }' });

    const failure = await buildConsole(dir).catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(ConsoleBuildError);
    expect((failure as Error).message).toBe('the console did not build: app.css imports https://cdn.example/bg.png: the console requests nothing from another origin');
  });

  it('refuses an index.html that loads a script or stylesheet by an absolute URL, and says where a source does not build', async () => {
    const external = appDir({ 'index.html': `${INDEX}<script src="https://cdn.example/x.js"></script>`, 'main.tsx': '', 'styles.css': '' });
    const broken = appDir({ 'index.html': INDEX, 'main.tsx': 'import { x } from "./missing";\nx();', 'styles.css': '' });

    const refused = await buildConsole(external).catch((error: unknown) => error);
    const failed = await buildConsole(broken).catch((error: unknown) => error);

    expect((refused as Error).message).toMatch(/^the console did not build: .*index\.html loads https:\/\/cdn\.example\/x\.js: the console requests nothing from another origin$/);
    expect(failed).toBeInstanceOf(ConsoleBuildError);
    expect((failed as Error).message).toMatch(/^the console did not build: .*main\.tsx:1:\d+: Could not resolve "\.\/missing"$/);
  });

  it('writes the files to a directory, which readConsoleFiles reads back as the same files', () => {
    const dir = join(appDir({}), 'console');

    writeConsoleFiles(FILES, dir);
    const read = readConsoleFiles(dir);

    expect(read?.map((file) => [file.path, file.etag]).sort()).toEqual(FILES.map((file) => [file.path, file.etag]).sort());
    expect(readConsoleFiles(join(dir, 'absent'))).toBeUndefined();
  });

  it('writes into a directory that holds other files without removing any: only its own files are replaced', () => {
    const dir = appDir({ 'notes.md': 'mine', 'app.js': 'an older build' });
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'main.ts'), 'mine too');

    writeConsoleFiles(FILES, dir);

    expect(readFileSync(join(dir, 'notes.md'), 'utf8')).toBe('mine');
    expect(readFileSync(join(dir, 'src', 'main.ts'), 'utf8')).toBe('mine too');
    expect(readFileSync(join(dir, 'app.js')).equals(FILES[1]!.body)).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['app.css', 'app.js', 'index.html', 'notes.md', 'src']);
  });
});

describe('consoleSite', () => {
  const site = consoleSite(FILES, {});
  const answer = (event: ApiEvent): ApiResult => site.answer(event)!;

  it('serves index.html at /console/ and each file by its name, with the CSP, nosniff, no-referrer, no-cache and its ETag', () => {
    const index = answer(request('GET', '/console/'));
    const script = answer(request('GET', '/console/app.js'));

    expect(index).toEqual({
      statusCode: 200,
      headers: {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-cache',
        etag: FILES[0]!.etag,
        'content-security-policy':
          "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        'x-content-type-options': 'nosniff',
        'referrer-policy': 'no-referrer',
      },
      body: FILES[0]!.body.toString('utf8'),
    });
    expect(script.headers?.['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers?.vary).toBe('accept-encoding');
    expect(script.body).toBe(FILES[1]!.body.toString('utf8'));
  });

  it("answers config.json with the deployment's configuration", () => {
    const signedIn = consoleSite(FILES, { signIn: SIGN_IN });

    expect(JSON.parse(answer(request('GET', '/console/config.json')).body!)).toEqual({});
    expect(JSON.parse(signedIn.answer(request('GET', '/console/config.json'))!.body!)).toEqual({ signIn: SIGN_IN });
  });

  it("answers the portal console's host the configuration without sign-in, and a CSP without the issuer's origins", () => {
    const both = consoleSite(FILES, { signIn: SIGN_IN }, { portalConsoleUrl: 'https://portal-api.example.com/console/' });
    const on = (domainName: string, path: string): ApiResult => {
      const event = request('GET', path);
      return both.answer({ ...event, requestContext: { ...event.requestContext, domainName } })!;
    };

    const portalConfig = on('Portal-API.example.com', '/console/config.json');
    const portalPage = on('portal-api.example.com', '/console/');
    const jwtConfig = on('jwt-api.example.com', '/console/config.json');
    const jwtPage = on('jwt-api.example.com', '/console/');

    expect(JSON.parse(portalConfig.body!)).toEqual({});
    expect(portalPage.headers?.['content-security-policy']).toContain("connect-src 'self';");
    expect(JSON.parse(jwtConfig.body!)).toEqual({ signIn: SIGN_IN });
    expect(jwtPage.headers?.['content-security-policy']).toContain("connect-src 'self' https://login.example.com https://auth.example.net;");
    // config.json differs between the two, so does its ETag; the page itself is the same file.
    expect(portalConfig.headers?.etag).not.toBe(jwtConfig.headers?.etag);
    expect(portalPage.headers?.etag).toBe(jwtPage.headers?.etag);
  });

  it('sends gzip to a browser that takes it, under an ETag of its own, and not to one that refuses it', () => {
    const gzipped = answer(request('GET', '/console/app.js', { 'accept-encoding': 'gzip, deflate, br' }));
    const refused = answer(request('GET', '/console/app.js', { 'accept-encoding': 'gzip;q=0, br' }));

    expect(gzipped.headers?.['content-encoding']).toBe('gzip');
    expect(gzipped.isBase64Encoded).toBe(true);
    expect(gunzipSync(Buffer.from(gzipped.body!, 'base64')).equals(FILES[1]!.body)).toBe(true);
    expect(gzipped.headers?.etag).toBe(`${FILES[1]!.etag.slice(0, -1)}-gz"`);
    expect(refused.headers?.['content-encoding']).toBeUndefined();
    expect(refused.body).toBe(FILES[1]!.body.toString('utf8'));
  });

  it("answers 304 with no body when If-None-Match holds the file's ETag (weak or in a list)", () => {
    const etag = FILES[1]!.etag;

    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const result = answer(request('GET', '/console/app.js', { 'if-none-match': header }));
      expect(result.statusCode).toBe(304);
      expect(result.body).toBeUndefined();
      expect(result.headers?.etag).toBe(etag);
    }
    expect(answer(request('GET', '/console/app.js', { 'if-none-match': '"other"' })).statusCode).toBe(200);
  });

  it('answers HEAD with the headers and no body', () => {
    const result = answer(request('HEAD', '/console/'));

    expect(result.statusCode).toBe(200);
    expect(result.headers?.etag).toBe(FILES[0]!.etag);
    expect(result.body).toBeUndefined();
  });

  it('redirects /console to console/ (308), keeping the query; 404 for an unknown file; 405 for another method', () => {
    const redirect = answer(request('GET', '/console', {}, { code: 'abc', state: 'xyz' }));
    const unknown = answer(request('GET', '/console/secret.txt'));
    const nested = answer(request('GET', '/console/pages/app.js'));
    const posted = answer(request('POST', '/console/'));

    expect(redirect.statusCode).toBe(308);
    expect(redirect.headers?.location).toBe('console/?code=abc&state=xyz');
    expect(new URL(String(redirect.headers?.location), 'https://api.example/console').href).toBe('https://api.example/console/?code=abc&state=xyz');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers?.['content-type']).toBe('text/plain; charset=utf-8');
    expect(nested.statusCode).toBe(404);
    expect(posted.statusCode).toBe(405);
    expect(posted.headers?.allow).toBe('GET, HEAD');
  });

  it('leaves every other path to the API: /v1, /consoles, /', () => {
    for (const path of ['/v1/endpoints', '/consoles', '/', '/v1/console']) expect(site.answer(request('GET', path))).toBeUndefined();
  });

  it('answers every console path 404 saying the files are missing when there are none', () => {
    const missing = consoleSite(undefined, {}, { missing: 'The files are not in this bundle.' });

    expect(missing.answer(request('GET', '/console/'))).toMatchObject({ statusCode: 404, body: 'The files are not in this bundle.\n' });
    expect(missing.answer(request('GET', '/console/config.json'))?.statusCode).toBe(404);
    expect(missing.answer(request('GET', '/v1/endpoints'))).toBeUndefined();
  });

  it('withConsole answers console paths from the site and hands every other request to the API unchanged', async () => {
    const seen: string[] = [];
    const handler = withConsole(async (event) => {
      seen.push(event.rawPath);
      return { statusCode: 401 };
    }, site);

    const page = await handler(request('GET', '/console/'));
    const api = await handler(request('GET', '/v1/endpoints'));

    expect(page.statusCode).toBe(200);
    expect(api.statusCode).toBe(401);
    expect(seen).toEqual(['/v1/endpoints']);
  });
});

describe("the console's configuration from the environment", () => {
  it('has no sign-in when the variable is unset or empty', () => {
    expect(consoleConfigFromEnvironment({})).toEqual({});
    expect(consoleConfigFromEnvironment({ [CONSOLE_ENV.signIn]: ' ' })).toEqual({});
  });

  it("reads the sign-in, and lets the page reach the issuer's and the token URL's origins (connect-src)", () => {
    const config = consoleConfigFromEnvironment({ [CONSOLE_ENV.signIn]: JSON.stringify(SIGN_IN) });

    expect(config).toEqual({ signIn: SIGN_IN });
    expect(contentSecurityPolicy(config)).toContain("connect-src 'self' https://login.example.com https://auth.example.net;");
  });

  it('fails naming the variable when it is not JSON, or not a sign-in', () => {
    const cases = [
      '{not json',
      JSON.stringify({ ...SIGN_IN, issuer: 'http://login.example.com' }),
      JSON.stringify({ ...SIGN_IN, clientId: '' }),
      JSON.stringify({ ...SIGN_IN, scopes: 'openid' }),
      JSON.stringify({ ...SIGN_IN, tokenUrl: 'not a url' }),
      JSON.stringify({ ...SIGN_IN, extra: true }),
      '[]',
    ];

    for (const value of cases) {
      const error = (() => {
        try {
          consoleConfigFromEnvironment({ [CONSOLE_ENV.signIn]: value });
        } catch (thrown) {
          return thrown;
        }
        return undefined;
      })();
      expect(error, value).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).variable).toBe(CONSOLE_ENV.signIn);
    }
  });

  it('reads the URL portal links point at, an https URL', () => {
    expect(portalConsoleUrlFromEnvironment({})).toBeUndefined();
    expect(portalConsoleUrlFromEnvironment({ [CONSOLE_ENV.portalConsoleUrl]: 'https://portal.example/console/' })).toBe('https://portal.example/console/');
    expect(() => portalConsoleUrlFromEnvironment({ [CONSOLE_ENV.portalConsoleUrl]: 'ftp://portal.example/' })).toThrow(ConfigError);
  });
});
