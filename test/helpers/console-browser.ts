/**
 * The console's browser tests (test/console/): a real headless Chromium (Debian's `chromium`,
 * driven by playwright-core) against a real sandbox (`npm start`'s process, test/helpers/sandbox.ts).
 *
 * - One browser per test file (`useConsole` launches it in `beforeAll`, closes it in `afterAll`).
 * - One sandbox per test file, with its clients; `consoleUrl` is READY's, the token in its fragment.
 * - Every page opened through `openPage` holds the console's rules, checked after each test (a
 *   broken rule fails the test that broke it):
 *   - no request to any origin but the sandbox's (such a request is aborted before it leaves and recorded);
 *   - no console error and no uncaught exception (a CSP violation is one);
 *   - none of the console's own files answered with an error, and no answer of 500 or more.
 *   An API answer of 4xx is the page's to handle (a lookup that finds nothing is a 404), so the
 *   browser's "Failed to load resource" line for it is not counted as an error.
 *
 * Chromium runs with `--no-sandbox` (CI runs as root in a container) and with its own background
 * traffic off, so the only requests are the page's.
 */
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { useSandboxProcess, type StartedSandbox } from './sandbox-suite';
import type { StartOptions } from './sandbox';

/** Debian's Chromium (`.ci/run` installs it when missing); playwright's own download is not used. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-component-update', '--no-first-run'];

/** The widths the console must be readable at (docs/contract.md §17). */
export const DESKTOP = { width: 1280, height: 800 } as const;
export const PHONE = { width: 390, height: 844 } as const;

/** Launch and page load on a busy machine: Chromium's start-up, the sandbox answering alongside. */
const LAUNCH_TIMEOUT_MS = 60_000;

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS, timeout: LAUNCH_TIMEOUT_MS });
}

export interface PageOptions {
  /** The viewport; default DESKTOP. */
  readonly viewport?: { readonly width: number; readonly height: number };
  /** Console errors a test provokes on purpose, by their text. */
  readonly allowConsoleErrors?: readonly RegExp[];
}

/** A page in its own browser context (its own sessionStorage), watched for the console's rules. */
export interface ConsolePage {
  readonly page: Page;
  readonly context: BrowserContext;
  /** The requests made to another origin (aborted), by URL. */
  externalRequests(): readonly string[];
  /** Every answer from the sandbox, in order: `GET /v1/endpoints 200` (the path without its query). */
  responses(): readonly string[];
  /** Every rule broken so far, one line each: external requests, console errors, failed answers. */
  problems(): readonly string[];
  close(): Promise<void>;
}

/**
 * A new page allowed to reach `origin` alone. Requests elsewhere are aborted and recorded, as are
 * console errors, uncaught exceptions, a console file answered >= 400 and any answer >= 500.
 */
export async function openWatchedPage(browser: Browser, origin: string, options: PageOptions = {}): Promise<ConsolePage> {
  const context = await browser.newContext({ viewport: options.viewport ?? DESKTOP, serviceWorkers: 'block' });
  const external: string[] = [];
  const problems: string[] = [];
  const responses: string[] = [];
  await context.route('**/*', async (route) => {
    const url = route.request().url();
    if (originOf(url) === origin) return route.continue();
    external.push(url);
    problems.push(`request to another origin: ${url}`);
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    // An HTTP error's line: judged by the response rule below, not as a script error.
    if (text.startsWith('Failed to load resource: the server responded with a status of')) return;
    if (options.allowConsoleErrors?.some((allowed) => allowed.test(text))) return;
    problems.push(`console error: ${text}`);
  });
  page.on('pageerror', (error) => problems.push(`uncaught exception: ${error.message}`));
  page.on('response', (response) => {
    const url = new URL(response.url());
    if (url.origin !== origin) return;
    const status = response.status();
    responses.push(`${response.request().method()} ${url.pathname} ${status}`);
    if (status >= 500) problems.push(`answered ${status}: ${response.request().method()} ${url.pathname}`);
    else if (status >= 400 && url.pathname.startsWith('/console')) problems.push(`console file answered ${status}: ${url.pathname}`);
  });
  return {
    page,
    context,
    externalRequests: () => [...external],
    responses: () => [...responses],
    problems: () => [...problems],
    close: () => context.close(),
  };
}

function originOf(url: string): string | undefined {
  try {
    return new URL(url).origin;
  } catch {
    return undefined;
  }
}

export interface ConsoleSuite {
  /** The sandbox and its clients (available in tests and in `beforeAll` after `useConsole`'s). */
  readonly started: StartedSandbox;
  readonly browser: Browser;
  /** READY's `consoleUrl`: `<apiUrl>/console/#token=<apiToken>`. */
  readonly consoleUrl: string;
  /** `http://127.0.0.1:<port>`: the one origin the page may reach. */
  readonly origin: string;
  /** A watched page (see the module's comment), closed and checked after the test. Not navigated. */
  openPage(options?: PageOptions): Promise<ConsolePage>;
  /** A watched page that has opened `url` (default `consoleUrl`) and rendered (the shell, or the signed-out page). */
  openConsole(url?: string, options?: PageOptions): Promise<ConsolePage>;
  /** Calls the sandbox's API with its token (or `token`), as a test's setup does. */
  api(method: string, path: string, body?: unknown, token?: string): Promise<{ status: number; json: any }>;
}

export interface ConsoleSuiteOptions {
  /** What to start before the sandbox (receivers) and its options; default: the demo (no options). */
  readonly setUp?: () => Promise<StartOptions>;
  readonly tearDown?: () => Promise<void>;
}

/**
 * In a test file's top level: a sandbox and a Chromium for all its tests, and after each test its
 * pages closed with the console's rules checked. The returned object's fields are valid from the
 * first test on.
 */
export function useConsole(options: ConsoleSuiteOptions = {}): ConsoleSuite {
  let started: StartedSandbox | undefined;
  let browser: Browser | undefined;
  let pages: ConsolePage[] = [];
  useSandboxProcess(
    options.setUp ?? (async () => ({})),
    (value) => (started = value),
    options.tearDown ?? (async () => {}),
  );
  beforeAll(async () => {
    browser = await launchChromium();
  }, LAUNCH_TIMEOUT_MS);
  afterEach(async () => {
    const opened = pages;
    pages = [];
    const problems = opened.flatMap((page) => page.problems());
    await Promise.all(opened.map((page) => page.close().catch(() => {})));
    expect(problems, "the console's rules: no external request, no console error, no failed file").toEqual([]);
  });
  afterAll(async () => {
    await browser?.close();
  });

  const need = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${what} is not started: use the suite inside a test`);
    return value;
  };
  const suite: ConsoleSuite = {
    get started() {
      return need(started, 'the sandbox');
    },
    get browser() {
      return need(browser, 'the browser');
    },
    get consoleUrl() {
      return need(started, 'the sandbox').sandbox.ready.consoleUrl;
    },
    get origin() {
      return need(started, 'the sandbox').sandbox.ready.apiUrl;
    },
    async openPage(pageOptions) {
      const page = await openWatchedPage(suite.browser, suite.origin, pageOptions);
      pages.push(page);
      return page;
    },
    async openConsole(url = suite.consoleUrl, pageOptions) {
      const watched = await suite.openPage(pageOptions);
      await watched.page.goto(url);
      // index.html holds no <main>: the page renders one, in the shell or the signed-out page.
      await watched.page.locator('main').first().waitFor({ timeout: 15_000 });
      return watched;
    },
    async api(method, path, body, token) {
      const ready = suite.started.sandbox.ready;
      const response = await fetch(`${ready.apiUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token ?? ready.apiToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, json: text === '' ? undefined : JSON.parse(text) };
    },
  };
  return suite;
}
