/**
 * Debian's Chromium driven by playwright-core, for the console's browser tests and its screenshots
 * (scripts/console-screenshots.ts): the browser launched as CI can run it, and a page watched for
 * the console's rules (test/helpers/console-browser.ts checks them after each test):
 *
 * - no request to any origin but the sandbox's (such a request is aborted before it leaves and recorded);
 * - no console error and no uncaught exception (a CSP violation is one);
 * - none of the console's own files answered with an error, and no answer of 500 or more.
 *   An API answer of 4xx is the page's to handle (a lookup that finds nothing is a 404), so the
 *   browser's "Failed to load resource" line for it is not counted as an error.
 *
 * Chromium runs with `--no-sandbox` (CI runs as root in a container) and with its own background
 * traffic off, so the only requests are the page's. No test framework here: a script uses it too.
 */
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

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
