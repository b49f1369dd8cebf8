import { useCallback, useEffect, useRef, useState } from 'react';
import { messageOf } from './http.ts';
import { errorParts } from './wallet.ts';

export interface Loaded<T> {
  data: T | null;
  error: string | null;
  loading: boolean;
  reload: () => void;
}

/** Loads data on mount (and on reload), keeping the last good value while reloading. */
export function useLoad<T>(load: () => Promise<T>, deps: readonly unknown[] = []): Loaded<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    let live = true;
    setLoading(true);
    loadRef.current().then(
      (value) => {
        if (!live) return;
        setData(value);
        setError(null);
        setLoading(false);
      },
      (err: unknown) => {
        if (!live) return;
        setError(messageOf(err));
        setLoading(false);
      },
    );
    return () => {
      live = false;
    };
  }, [tick, ...deps]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload };
}

export interface Submit {
  busy: boolean;
  error: string | null;
  /** What a wallet said in full, for the error's folded details; null for other errors. */
  errorDetail: string | null;
  setError: (message: string | null) => void;
  run: (action: () => Promise<void>) => Promise<void>;
}

/** A form's sending state: one request at a time, the server's (or the wallet's) message on failure. */
export function useSubmit(): Submit {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<{ message: string; detail: string | null } | null>(null);
  const setError = useCallback((message: string | null) => setFailure(message === null ? null : { message, detail: null }), []);
  const run = useCallback(async (action: () => Promise<void>) => {
    setBusy(true);
    setFailure(null);
    try {
      await action();
    } catch (err) {
      setFailure(errorParts(err));
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error: failure?.message ?? null, errorDetail: failure?.detail ?? null, setError, run };
}
