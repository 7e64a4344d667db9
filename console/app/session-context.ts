/** The session as the pages read it: who they act for, and so what they offer. */
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Credential } from './session';

export interface SessionView {
  readonly credential: Credential;
  /** Set in portal mode: the one owner whose endpoints and deliveries this page shows. */
  readonly portalOwner: string | undefined;
}

export const SessionContext = createContext<SessionView | undefined>(undefined);

export function useSession(): SessionView {
  const session = useContext(SessionContext);
  if (session === undefined) throw new Error('useSession outside the signed-in shell');
  return session;
}
