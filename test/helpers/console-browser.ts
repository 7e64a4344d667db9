/**
 * The console's browser tests (test/console/): a real headless Chromium (test/helpers/chromium.ts)
 * against a real sandbox (`npm start`'s process, test/helpers/sandbox.ts).
 *
 * - One browser per test file (`useConsole` launches it in `beforeAll`, closes it in `afterAll`).
 * - One sandbox per test file, with its clients; `consoleUrl` is READY's, the token in its fragment.
 * - Every page opened through the suite is watched for the console's rules (no request to another
 *   origin, no console error, no failed file: test/helpers/chromium.ts), checked after each test:
 *   a broken rule fails the test that broke it.
 */
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { launchChromium, openWatchedPage, type ConsolePage, type PageOptions } from './chromium';
import { useSandboxProcess, type StartedSandbox } from './sandbox-suite';
import type { StartOptions } from './sandbox';

export { CHROMIUM_PATH, DESKTOP, PHONE, launchChromium, openWatchedPage, type ConsolePage, type PageOptions } from './chromium';

/** Chromium's start-up on a busy machine. */
const LAUNCH_TIMEOUT_MS = 60_000;

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

/**
 * Moves the keyboard focus with Tab (then Shift+Tab, the other way) until `target` has it, as a
 * keyboard user reaches it; fails when `presses` each way do not.
 */
export async function tabTo(page: Page, target: Locator, presses = 40): Promise<void> {
  for (const key of ['Tab', 'Shift+Tab']) {
    for (let i = 0; i < presses; i++) {
      if (await target.evaluate((element) => element.ownerDocument.activeElement === element)) return;
      await page.keyboard.press(key);
    }
  }
  throw new Error('the keyboard does not reach the element');
}
