/**
 * A small history router. Paths are relative to the app's base (/admin/), which comes from the
 * page's <base href>, so links stay right under any path prefix.
 */
import { useEffect, useState } from 'react';

const CHANGE = 'splitline:navigate';

export function basePath(): string {
  return new URL(document.baseURI).pathname;
}

/** The current route as segments: /admin/receipts/abc → ['receipts', 'abc']. */
export function currentSegments(): string[] {
  const base = basePath();
  const path = window.location.pathname;
  const rest = path.startsWith(base) ? path.slice(base.length) : '';
  return rest
    .split('/')
    .filter((s) => s !== '')
    .map((s) => decodeURIComponent(s));
}

export function hrefOf(route: string): string {
  return basePath() + route.replace(/^\//, '');
}

export function navigate(route: string, opts: { replace?: boolean } = {}): void {
  const href = hrefOf(route);
  if (opts.replace) window.history.replaceState(null, '', href);
  else window.history.pushState(null, '', href);
  window.dispatchEvent(new Event(CHANGE));
  window.scrollTo(0, 0);
}

export function useRoute(): string[] {
  const [segments, setSegments] = useState(currentSegments);
  useEffect(() => {
    const update = () => setSegments(currentSegments());
    window.addEventListener('popstate', update);
    window.addEventListener(CHANGE, update);
    return () => {
      window.removeEventListener('popstate', update);
      window.removeEventListener(CHANGE, update);
    };
  }, []);
  return segments;
}
