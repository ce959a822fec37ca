import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { getToken, onAuthChange, setToken } from './api';
import { Bell } from './bell';
import { ConsolePage } from './console';
import { McpPage } from './mcp-page';
import { MemoryPage } from './memory-page';
import { SchedulesPage } from './schedules-page';
import { Link, navigate, signInListeners } from './nav';
import { RunPage } from './run-page';
import { SessionPage } from './session-page';
import { SessionsPage } from './sessions-page';
import './style.css';

function SignIn(props: { onDone(): void }) {
  const [value, setValue] = useState('');
  return (
    <form
      class="signin"
      onSubmit={(e) => {
        e.preventDefault();
        if (value.trim()) {
          setToken(value.trim());
          props.onDone();
        }
      }}
    >
      <h2>Sign in</h2>
      <p>This API runs in token mode. Paste a bearer token (it is kept for this tab only).</p>
      <label>
        Token{' '}
        <input
          type="password"
          name="token"
          autoComplete="off"
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
          autoFocus
        />
      </label>{' '}
      <button type="submit">Sign in</button>
    </form>
  );
}

function App() {
  const [path, setPath] = useState(location.pathname);
  const [needSignIn, setNeedSignIn] = useState(false);
  const [authVersion, setAuthVersion] = useState(0);
  useEffect(() => {
    const onPop = () => setPath(location.pathname);
    addEventListener('popstate', onPop);
    const l = () => setNeedSignIn(true);
    signInListeners.add(l);
    const off = onAuthChange(() => setAuthVersion((v) => v + 1));
    return () => {
      removeEventListener('popstate', onPop);
      signInListeners.delete(l);
      off();
    };
  }, []);
  const token = getToken();
  let page: preact.ComponentChildren;
  let m: RegExpExecArray | null;
  if (needSignIn) page = <SignIn onDone={() => setNeedSignIn(false)} />;
  else if ((m = /^\/sessions\/([0-9a-f-]{36})\/?$/i.exec(path))) page = <SessionPage key={m[1]} id={m[1]} />;
  else if ((m = /^\/runs\/([0-9a-f-]{36})\/?$/i.exec(path))) page = <RunPage key={m[1]} id={m[1]} />;
  else if (/^\/console\/?$/.test(path)) page = <ConsolePage />;
  else if (/^\/mcp\/?$/.test(path)) page = <McpPage />;
  else if (/^\/memories\/?$/.test(path)) page = <MemoryPage />;
  else if (/^\/schedules\/?$/.test(path)) page = <SchedulesPage />;
  else page = <SessionsPage />;
  const here = (p: string) => (path === p || (p === '/' && path.startsWith('/sessions/')) ? 'page' : undefined);
  return (
    <>
      <header class="top">
        <Link href="/" class="brand">
          agent-core
        </Link>
        <nav aria-label="main">
          <a href="/" aria-current={here('/')} onClick={(e) => (e.preventDefault(), navigate('/'))}>
            Sessions
          </a>
          <a
            href="/console"
            aria-current={here('/console')}
            onClick={(e) => (e.preventDefault(), navigate('/console'))}
          >
            Approvals
          </a>
          <a
            href="/memories"
            aria-current={here('/memories')}
            onClick={(e) => (e.preventDefault(), navigate('/memories'))}
          >
            Memory
          </a>
          <a
            href="/schedules"
            aria-current={here('/schedules')}
            onClick={(e) => (e.preventDefault(), navigate('/schedules'))}
          >
            Schedules
          </a>
          <a href="/mcp" aria-current={here('/mcp')} onClick={(e) => (e.preventDefault(), navigate('/mcp'))}>
            MCP
          </a>
        </nav>
        <Bell key={`bell-${authVersion}`} />
        {token ? (
          <button class="link" type="button" onClick={() => (setToken(null), setNeedSignIn(true))}>
            Sign out
          </button>
        ) : null}
      </header>
      <main id="main" key={`${authVersion}`}>
        {page}
      </main>
    </>
  );
}

render(<App />, document.getElementById('root')!);
