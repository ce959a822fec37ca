import { readFileSync, statSync, type Stats } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, YAMLError } from 'yaml';
import { ConfigurationError } from '../../../domain/errors';
import type { FakeFixture } from './fixture';
import { FixtureFormatError, parseFixture } from './fixture-parser';

/**
 * Loads fake-model fixtures by name from a directory of `<name>.yaml` files. Errors are
 * ConfigurationError with `details.code` fixture_not_found / fixture_invalid and the list of
 * available names, so a typo in an agent's model policy or an eval case is obvious.
 */

const FIXTURE_NAME = /^[a-z0-9][a-z0-9_-]*$/;
const EXTENSION = '.yaml';

/** Names of the fixtures in `fixturesDir`, sorted; empty when the directory does not exist. */
export async function listFixtures(fixturesDir: string): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(fixturesDir);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  return entries
    .filter((f) => f.endsWith(EXTENSION))
    .map((f) => f.slice(0, -EXTENSION.length))
    .sort();
}

/** Reads and validates one fixture; throws ConfigurationError when it is missing or malformed. */
export async function loadFixture(fixturesDir: string, name: string): Promise<FakeFixture> {
  // The name comes from configuration (`fake:<name>`); never let it walk out of the directory.
  if (!FIXTURE_NAME.test(name)) {
    throw await notFound(fixturesDir, name, 'is not a valid fixture name (lowercase letters, digits, _ and -)');
  }
  const file = join(fixturesDir, name + EXTENSION);
  let text: string;
  let version: string;
  try {
    // statSync, not fs/promises stat: this runs on every model call, and an async stat is a
    // threadpool round trip (two thread wakeups) for a few microseconds of syscall on a small local
    // file. The version is still taken on every call, so an edit applies to the very next one.
    version = versionOf(statSync(file));
    const hit = parsed.get(file);
    if (hit && hit.version === version) return hit.fixture;
    // A miss (first call, or the file changed) stays async: rare, and a read should not hold the
    // event loop that other runs of this worker share. Stat before read: a change in between is
    // cached under the older version and so re-read on the next call.
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (isNotFound(error)) throw await notFound(fixturesDir, name, 'does not exist');
    throw error;
  }
  try {
    const fixture = parseFixture(parse(text), name);
    remember(file, version, fixture);
    return fixture;
  } catch (error) {
    // YAML syntax errors and FixtureFormatError both mean "fix the file", so they share one code.
    if (error instanceof FixtureFormatError || error instanceof YAMLError) {
      throw new ConfigurationError(`model fixture '${name}' in ${fixturesDir} is malformed: ${error.message}`, {
        code: 'fixture_invalid',
        fixture: name,
        fixturesDir,
      });
    }
    throw error;
  }
}

/**
 * The fixture's declared `context_limit` (read synchronously: the router resolves routes
 * synchronously, once per run); null when the fixture is missing, malformed or declares none -
 * the model call itself reports those problems.
 */
export function fixtureContextLimit(fixturesDir: string, name: string): number | null {
  if (!FIXTURE_NAME.test(name)) return null;
  const file = join(fixturesDir, name + EXTENSION);
  try {
    const version = versionOf(statSync(file));
    const hit = parsed.get(file);
    if (hit && hit.version === version) return hit.fixture.contextLimit;
    const fixture = parseFixture(parse(readFileSync(file, 'utf8')), name);
    remember(file, version, fixture);
    return fixture.contextLimit;
  } catch {
    return null;
  }
}

/**
 * Parsed fixtures by file, reused while the file's modification time and size are unchanged: an
 * edit still applies to the next call without a restart, but an unchanged fixture is not read and
 * parsed again on every model call (which the runs benchmark measured as platform time).
 */
const parsed = new Map<string, { readonly version: string; readonly fixture: FakeFixture }>();
const MAX_CACHED = 256;

function versionOf(st: Stats): string {
  return `${st.mtimeMs}:${st.ctimeMs}:${st.size}:${st.ino}`;
}

function remember(file: string, version: string, fixture: FakeFixture): void {
  parsed.delete(file);
  parsed.set(file, { version, fixture });
  if (parsed.size > MAX_CACHED) parsed.delete(parsed.keys().next().value as string);
}

async function notFound(fixturesDir: string, name: string, problem: string): Promise<ConfigurationError> {
  const available = await listFixtures(fixturesDir);
  const listing = available.length > 0 ? available.join(', ') : '(none)';
  return new ConfigurationError(`model fixture '${name}' ${problem} in ${fixturesDir}; available: ${listing}`, {
    code: 'fixture_not_found',
    fixture: name,
    fixturesDir,
    available,
  });
}

/** Structural, not `instanceof Error`: Node's fs errors come from another realm under Jest's VM. */
function isNotFound(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ENOENT';
}
