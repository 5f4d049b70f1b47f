import { useQueryClient } from '@tanstack/react-query';
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { ApiError, api, setCsrfToken, setUnauthorizedHandler } from './client';
import type { Scope, Session } from './types';

/** What the signed-in key may do, named after the actions the console offers. */
export interface Abilities {
  /** reads of /tenant, /identity, /intelligence */
  read: boolean;
  /** profile / segment / product writes, merges, erasure */
  write: boolean;
  /** API keys, webhooks, settings, model fits, dead-letter retries */
  admin: boolean;
}

export function abilitiesOf(scopes: readonly Scope[]): Abilities {
  const admin = scopes.includes('admin');
  const write = admin || scopes.includes('editor');
  const read = write || scopes.includes('viewer');
  return { read, write, admin };
}

type SessionState =
  | { status: 'loading' }
  | { status: 'signed-out'; error?: string }
  | { status: 'signed-in'; session: Session };

interface SessionContextValue {
  state: SessionState;
  signIn: (apiKey: string) => Promise<void>;
  signOut: () => Promise<void>;
}

const SessionContext = createContext<SessionContextValue | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });
  const queryClient = useQueryClient();

  const adopt = useCallback((session: Session) => {
    setCsrfToken(session.csrf_token);
    setState({ status: 'signed-in', session });
  }, []);

  const drop = useCallback(
    (error?: string) => {
      setCsrfToken(null);
      queryClient.clear();
      setState({ status: 'signed-out', error });
    },
    [queryClient],
  );

  useEffect(() => {
    let cancelled = false;
    const load = async (attempt: number): Promise<void> => {
      try {
        const res = await api.get<{ data: Session }>('/tenant/session');
        if (!cancelled) adopt(res.data);
      } catch (err) {
        if (cancelled) return;
        if (err instanceof ApiError && (err.status === 503 || err.status === 0) && attempt < 20) {
          setTimeout(() => void load(attempt + 1), Math.min(5000, 500 * 2 ** attempt));
          return;
        }
        setState({ status: 'signed-out' });
      }
    };
    void load(0);
    return () => {
      cancelled = true;
    };
  }, [adopt]);

  useEffect(() => {
    setUnauthorizedHandler(() => drop('Your session has ended. Sign in again.'));
    return () => setUnauthorizedHandler(null);
  }, [drop]);

  const signIn = useCallback(
    async (apiKey: string) => {
      const res = await api.post<{ data: Session }>('/tenant/session', { api_key: apiKey });
      adopt(res.data);
    },
    [adopt],
  );

  const signOut = useCallback(async () => {
    try {
      await api.delete('/tenant/session');
    } finally {
      drop();
    }
  }, [drop]);

  const value = useMemo(() => ({ state, signIn, signOut }), [state, signIn, signOut]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSessionState(): SessionContextValue {
  const ctx = useContext(SessionContext);
  if (!ctx) throw new Error('useSessionState outside SessionProvider');
  return ctx;
}

/** The signed-in session (only used below the sign-in gate). */
export function useSession(): Session & { can: Abilities } {
  const { state } = useSessionState();
  if (state.status !== 'signed-in') throw new Error('useSession while signed out');
  return { ...state.session, can: abilitiesOf(state.session.scopes) };
}
