import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import { ValidationError } from '../../domain/errors';

/**
 * Addresses a webhook may not reach unless WEBHOOK_ALLOW_PRIVATE=1 (issue 31 "Bad input"):
 * loopback, private, shared, link-local (the cloud metadata address 169.254.169.254 among them),
 * unspecified and unique-local ranges.
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const)
  BLOCKED.addSubnet(net, prefix, 'ipv6');

function blocked(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return BLOCKED.check(mapped[1], 'ipv4');
  return BLOCKED.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
}

export const privateAllowed = (env: NodeJS.ProcessEnv = process.env) => env.WEBHOOK_ALLOW_PRIVATE === '1';

/**
 * Refuses a webhook URL that is not http(s) or resolves to a blocked address. Run at registration
 * and again before every delivery attempt (a name may resolve elsewhere later: DNS rebinding).
 */
export async function checkWebhookUrl(raw: string, allowPrivate = privateAllowed()): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ValidationError('url is not a valid URL', { field: 'url' });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ValidationError('url must be http or https', { field: 'url', protocol: url.protocol });
  if (url.username || url.password) throw new ValidationError('url must not carry credentials', { field: 'url' });
  if (allowPrivate) return url;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  } catch {
    throw new ValidationError(`url host ${host} does not resolve`, { field: 'url' });
  }
  const bad = addresses.find(blocked);
  if (bad)
    throw new ValidationError(
      `url resolves to a loopback, private, link-local or metadata address (${bad}); set WEBHOOK_ALLOW_PRIVATE=1 to allow it`,
      { field: 'url', address: bad },
    );
  return url;
}
