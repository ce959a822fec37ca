import { ApiError } from './api';

/** Client-side routing by path: `/`, `/sessions/{id}`, `/runs/{id}`, `/console`. */
export function navigate(to: string): void {
  if (to === location.pathname) return;
  history.pushState(null, '', to);
  dispatchEvent(new PopStateEvent('popstate'));
}

/** A same-origin link that routes without a reload (ctrl/cmd-click still opens a new tab). */
export function Link(props: { href: string; class?: string; children: preact.ComponentChildren }) {
  return (
    <a
      href={props.href}
      class={props.class}
      onClick={(e) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}

export const signInListeners = new Set<() => void>();
/** Views call this with any API error: a 401 opens the sign-in form (token mode). */
export function reportAuth(e: unknown): void {
  if (e instanceof ApiError && e.needsSignIn) signInListeners.forEach((l) => l());
}
