/**
 * The page's routes, in the URL's fragment (`#/endpoints?owner=acme`): a reload or a shared link
 * opens the same view, and nothing of it reaches a server. A fragment that does not start with `#/`
 * is a credential (session.ts), never a route.
 */
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { readonly page: 'overview' }
  | { readonly page: 'endpoints'; readonly owner?: string; readonly state?: string }
  | { readonly page: 'endpoint-new' }
  | { readonly page: 'endpoint'; readonly name: string }
  | { readonly page: 'endpoint-edit'; readonly name: string }
  | { readonly page: 'lookup'; readonly id?: string }
  | { readonly page: 'dead'; readonly filters: Readonly<Record<string, string>> };

/** The navigation's pages, by their visible labels (the contract reaches each by its label). */
export const NAV = [
  { label: 'Overview', href: '#/overview', pages: ['overview'] },
  { label: 'Endpoints', href: '#/endpoints', pages: ['endpoints', 'endpoint', 'endpoint-new', 'endpoint-edit'] },
  { label: 'Lookup', href: '#/lookup', pages: ['lookup'] },
  { label: 'Dead letters', href: '#/dead', pages: ['dead'] },
] as const;

export function parseRoute(hash: string): Route {
  const [path = '', search = ''] = hash.replace(/^#/, '').split('?', 2);
  const query = new URLSearchParams(search);
  let parts: string[];
  try {
    parts = path.split('/').filter((part) => part !== '').map((part) => decodeURIComponent(part));
  } catch {
    // A malformed escape (`%E0%A4%A`, a lone `%`) names no page: the Overview.
    return { page: 'overview' };
  }
  const given = (name: string) => query.get(name) || undefined;
  switch (parts[0]) {
    case 'endpoints':
      if (parts[1] === undefined) return { page: 'endpoints', ...optional('owner', given('owner')), ...optional('state', given('state')) };
      if (parts[1] === 'new' && parts.length === 2) return { page: 'endpoint-new' };
      return parts[2] === 'edit' ? { page: 'endpoint-edit', name: parts[1] } : { page: 'endpoint', name: parts[1] };
    case 'lookup':
      return { page: 'lookup', ...optional('id', given('id')) };
    case 'dead':
      return { page: 'dead', filters: Object.fromEntries([...query].filter(([, value]) => value !== '')) };
    default:
      return { page: 'overview' };
  }
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** `#/path?query`, leaving out empty values. */
export function href(path: string, query: Readonly<Record<string, string | undefined>> = {}): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, value);
  const text = params.toString();
  return `#${path}${text === '' ? '' : `?${text}`}`;
}

export function endpointHref(name: string, edit = false): string {
  return `#/endpoints/${encodeURIComponent(name)}${edit ? '/edit' : ''}`;
}

export function navigate(to: string): void {
  location.hash = to.replace(/^#/, '');
}

/** The current route, following the fragment. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const follow = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  return route;
}
