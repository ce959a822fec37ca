import * as fs from 'node:fs';
import * as path from 'node:path';

/** Express-compatible request/response: the few members the dashboard middleware reads. */
interface Req {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
}
interface Res {
  statusCode: number;
  setHeader(name: string, value: string | number): void;
  end(body?: Buffer | string): void;
}
type Next = () => void;

/** Client-side routes of the dashboard: each answers the same index.html. */
const PAGES = [
  /^\/$/,
  /^\/console\/?$/,
  /^\/mcp\/?$/,
  /^\/memories\/?$/,
  /^\/schedules\/?$/,
  /^\/sessions\/[0-9a-f-]{36}\/?$/i,
  /^\/runs\/[0-9a-f-]{36}\/?$/i,
];

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Only same-origin scripts, styles and fetches: rendered tool output can never load or run anything. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  body: Buffer;
  gzip: Buffer | null;
  type: string;
  etag: string;
}

/** Where `scripts/build-dashboard.js` writes the bundle: `<project root>/dist/dashboard`. */
export function defaultDashboardDir(): string {
  let dir = __dirname;
  while (!fs.existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return path.join(dir, 'dist', 'dashboard');
}

/**
 * Serves the built dashboard (dist/dashboard: index.html + assets/*) at `/`, `/console`,
 * `/sessions/{id}` and `/runs/{id}` (client-side routing), with pre-compressed gzip when the client
 * accepts it. Everything else falls through to the API. Files are read once, on first use; nothing is
 * fetched from the network.
 */
export function dashboardMiddleware(dir: string = defaultDashboardDir()) {
  const cache = new Map<string, Asset | null>();
  const load = (rel: string): Asset | null => {
    if (cache.has(rel)) return cache.get(rel)!;
    const file = path.join(dir, rel);
    let asset: Asset | null = null;
    if (fs.existsSync(file)) {
      const body = fs.readFileSync(file);
      const gz = fs.existsSync(`${file}.gz`) ? fs.readFileSync(`${file}.gz`) : null;
      const stat = fs.statSync(file);
      asset = {
        body,
        gzip: gz,
        type: TYPES[path.extname(file)] ?? 'application/octet-stream',
        etag: `"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`,
      };
    }
    // Cache hits only: a missing bundle is looked for again (the build may finish after startup).
    if (asset) cache.set(rel, asset);
    return asset;
  };

  return (req: Req, res: Res, next: Next): void => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    let rel: string | null = null;
    if (PAGES.some((re) => re.test(req.path))) rel = 'index.html';
    else {
      const m = /^\/assets\/([a-z0-9-]+\.(?:js|css|svg))$/.exec(req.path);
      if (m) rel = `assets/${m[1]}`;
    }
    if (rel === null) return next();
    const asset = load(rel);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    if (!asset) {
      res.statusCode = rel === 'index.html' ? 503 : 404;
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end(
        rel === 'index.html'
          ? 'The dashboard is not built: run `node scripts/build-dashboard.js` (part of `npm run build`).\n'
          : 'not found\n',
      );
      return;
    }
    res.setHeader('Content-Type', asset.type);
    res.setHeader('ETag', asset.etag);
    res.setHeader('Vary', 'Accept-Encoding');
    // index.html is revalidated every time; assets are versioned by a content hash in their URL query.
    res.setHeader('Cache-Control', rel === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable');
    if (rel === 'index.html') {
      res.setHeader('Content-Security-Policy', CSP);
      res.setHeader('Referrer-Policy', 'no-referrer');
    }
    if (req.headers['if-none-match'] === asset.etag) {
      res.statusCode = 304;
      res.end();
      return;
    }
    const accept = String(req.headers['accept-encoding'] ?? '');
    const useGzip = asset.gzip !== null && /\bgzip\b/.test(accept);
    const body = useGzip ? asset.gzip! : asset.body;
    if (useGzip) res.setHeader('Content-Encoding', 'gzip');
    res.setHeader('Content-Length', body.length);
    res.statusCode = 200;
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
