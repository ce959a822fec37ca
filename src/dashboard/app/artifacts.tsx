import { useEffect, useState } from 'preact/hooks';
import { api, authHeaders, describeError, type Page } from './api';
import { reportAuth } from './nav';

/** An artifact as `GET /v1/runs/{id}/artifacts` lists it (docs/api.md). */
export interface Artifact {
  id: string;
  name: string;
  media_type: string;
  size_bytes: number;
  sha256: string;
  source: string;
  run_id: string | null;
  created_at: string;
  expires_at: string | null;
  content_url: string;
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

const hex = (b: ArrayBuffer) => Array.from(new Uint8Array(b), (x) => x.toString(16).padStart(2, '0')).join('');

/**
 * Downloads with the bearer token (a plain link cannot send it), checks the SHA-256 in the browser
 * when Web Crypto is available (secure contexts: localhost, https), then saves the file.
 */
async function download(a: Artifact): Promise<string> {
  const r = await fetch(a.content_url, { headers: authHeaders() });
  if (!r.ok) {
    const body = (await r.json().catch(() => null)) as Parameters<typeof describeError>[0];
    throw describeError(body, r.status);
  }
  const bytes = await r.arrayBuffer();
  let verdict = 'SHA-256 not checked (no Web Crypto on this page)';
  if (globalThis.crypto?.subtle) {
    const got = hex(await crypto.subtle.digest('SHA-256', bytes));
    if (got !== a.sha256) throw new Error(`the download's SHA-256 ${got} does not match ${a.sha256}; not saved`);
    verdict = 'SHA-256 verified';
  }
  const url = URL.createObjectURL(new Blob([bytes], { type: a.media_type }));
  const link = document.createElement('a');
  link.href = url;
  link.download = a.name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  return verdict;
}

/** A run's artifacts: name, type, size, SHA-256 and a verified download. Re-read when `refresh` changes. */
export function RunArtifacts(props: { runId: string; refresh: number }) {
  const [items, setItems] = useState<Artifact[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [status, setStatus] = useState<Record<string, string>>({});
  useEffect(() => {
    api<Page<Artifact>>('GET', `/v1/runs/${props.runId}/artifacts`).then(
      (p) => setItems(p.items),
      (e: unknown) => (reportAuth(e), setError(e instanceof Error ? e.message : String(e))),
    );
  }, [props.runId, props.refresh]);

  const save = (a: Artifact) => {
    setStatus((s) => ({ ...s, [a.id]: 'downloading…' }));
    download(a).then(
      (v) => setStatus((s) => ({ ...s, [a.id]: `downloaded · ${v}` })),
      (e: unknown) => setStatus((s) => ({ ...s, [a.id]: `failed: ${e instanceof Error ? e.message : String(e)}` })),
    );
  };

  if (error)
    return (
      <p class="error" role="alert">
        Artifacts could not be listed: {error}
      </p>
    );
  if (!items || items.length === 0) return null;
  return (
    <>
      <h2>Artifacts ({items.length})</h2>
      <div class="table-wrap">
        <table class="artifacts" aria-label="artifacts">
          <thead>
            <tr>
              <th scope="col">name</th>
              <th scope="col">type</th>
              <th scope="col">size</th>
              <th scope="col">SHA-256</th>
              <th scope="col">download</th>
            </tr>
          </thead>
          <tbody>
            {items.map((a) => (
              <tr key={a.id} data-artifact={a.id}>
                <td>
                  <strong>{a.name}</strong>
                  <div class="muted">{a.source}</div>
                </td>
                <td>{a.media_type}</td>
                <td data-size={a.size_bytes} title={`${a.size_bytes} bytes`}>
                  {formatBytes(a.size_bytes)}
                </td>
                <td>
                  <code class="sha" data-sha256={a.sha256} title={a.sha256}>
                    {a.sha256}
                  </code>
                </td>
                <td>
                  <a
                    href={a.content_url}
                    download={a.name}
                    onClick={(e) => {
                      e.preventDefault();
                      save(a);
                    }}
                  >
                    Download
                  </a>
                  {status[a.id] ? (
                    <div class="muted" data-download-status>
                      {status[a.id]}
                    </div>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
