/**
 * The construct's settings (`settings`, over lib/config.ts's defaults) as a deployed stack takes
 * them: validated as the sandbox and the handler validate them, plus what only AWS requires (a
 * webhook URL unless endpoints are declared) and refuses (a value that would land in the template).
 */
import { Token } from 'aws-cdk-lib';
import { checkEndpoint, DEFAULT_SETTINGS, validateSettings, type Settings } from '../../lib/config';
import { ConfigError } from '../../lib/errors';

/**
 * Props over the defaults, validated, plus what only the deployed stack requires: a webhook URL,
 * unless endpoints are declared. @throws ConfigError
 */
export function resolveSettings(overrides: Partial<Settings>, options: { endpointsDeclared?: boolean } = {}): Settings {
  const url = overrides.webhookUrl;
  if (url !== undefined && Token.isUnresolved(url)) {
    // Known only at deploy time (a CloudFormation parameter): its pattern checks it then, and the
    // consumer's endpoint guard refuses a bad one at cold start.
    return { ...resolveSettings({ ...overrides, webhookUrl: 'https://deploy-time.invalid/' }, options), webhookUrl: url };
  }
  const settings = validateSettings({ ...DEFAULT_SETTINGS, ...overrides });
  if (settings.webhookUrl === undefined) {
    if (!options.endpointsDeclared) {
      throw new ConfigError('webhookUrl', 'is required unless `endpoints` declares some: the stack has no demo receiver to fall back to');
    }
  } else {
    checkEndpoint(settings.webhookUrl, settings, 'webhookUrl');
  }
  if (settings.webhookSecret !== undefined) {
    throw new ConfigError(
      'webhookSecret',
      'is for the local sandbox only: in AWS pass a Secrets Manager secret as `signingSecret` (a value here would end up in the template)',
    );
  }
  // Read as the consumer reads it (WHATWG URL: `http:\\user:pass@host` holds credentials too), not by pattern.
  if (settings.proxyUrl !== undefined && hasCredentials(settings.proxyUrl)) {
    throw new ConfigError(
      'proxyUrl',
      "must not hold a user or password in AWS: it would end up in the template and the consumer's environment; let the proxy allow the VPC's addresses (egress.staticIps) instead",
    );
  }
  // The schedule against the queue's retention, and the ledger's retention against the longest
  // delivery, were checked by validateSettings (lib/config.ts checkLifetimes), as the sandbox and
  // the handler check them: a bad pair fails the synth.
  return settings;
}

function hasCredentials(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false; // Not a URL: validateSettings has refused it already.
  }
}
