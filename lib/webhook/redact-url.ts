/**
 * A webhook URL as it may be shown: in errors, logs, the sandbox's output, the state file.
 *
 * Receivers often authenticate the caller through the URL itself (`https://user:pass@host/…`,
 * `…?token=…`), so the URL is a secret in part. Everything that shows one goes through
 * `redactUrl`; only the sender uses the exact value.
 */

/** What is shown in place of a secret part. */
export const REDACTED = '***';

/** What is shown for input that is not a URL at all: it may be a secret pasted in the wrong place. */
export const UNPARSABLE_URL = '<unparsable URL>';

/**
 * The URL with userinfo replaced by `***` and every query parameter's value replaced by `***`
 * (keys kept, so a reader can see which parameters were set). A query part without `=` may be a
 * bare token, so it is redacted whole. The fragment is never sent but may hold a token too: it
 * is redacted whole. Scheme, host, port and path are kept. Input `URL` cannot parse is shown as
 * `UNPARSABLE_URL`, never raw.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return UNPARSABLE_URL;
  }
  const userinfo = parsed.username !== '' || parsed.password !== '' ? `${REDACTED}@` : '';
  // `parsed.search` keeps the source's encoding, so the keys shown are the keys as written.
  const query = parsed.search === '' ? '' : `?${redactQuery(parsed.search.slice(1))}`;
  const fragment = parsed.hash === '' ? '' : `#${REDACTED}`;
  // `host` carries the port and an IPv6 literal's brackets; URLs without one (`mailto:`) keep none.
  const authority = parsed.host === '' ? '' : `//${userinfo}${parsed.host}`;
  return `${parsed.protocol}${authority}${parsed.pathname}${query}${fragment}`;
}

function redactQuery(query: string): string {
  return query
    .split('&')
    .map((part) => {
      if (part === '') return part;
      const equals = part.indexOf('=');
      return equals < 0 ? REDACTED : `${part.slice(0, equals)}=${REDACTED}`;
    })
    .join('&');
}
