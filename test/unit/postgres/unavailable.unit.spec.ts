import { asDatabaseUnavailable, isDatabaseUnavailable } from '../../../src/adapters/postgres/unavailable';
import { DatabaseUnavailable } from '../../../src/domain/errors';
import { toErrorResponse } from '../../../src/api/error-envelope';

const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('a database error during a failover', () => {
  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5000'), { code: 'ECONNREFUSED' })],
    ['a cut connection', new Error('Connection terminated unexpectedly')],
    ['an administrator shutdown', pgError('57P01', 'terminating connection due to administrator command')],
    ['a server still starting', pgError('57P03', 'the database system is starting up')],
    ['a demoted primary refusing writes', pgError('25006', 'cannot execute INSERT in a read-only transaction')],
    ['PgBouncer losing its server', pgError('08P01', 'server conn crashed?')],
  ])('is recognised: %s', (_, e) => {
    expect(isDatabaseUnavailable(e)).toBe(true);
    const wrapped = asDatabaseUnavailable(e);
    expect(wrapped).toBeInstanceOf(DatabaseUnavailable);
    expect((wrapped as Error).cause).toBe(e);
  });

  it.each([
    ['a unique violation', pgError('23505', 'duplicate key value')],
    ['a syntax error', pgError('42601', 'syntax error')],
    ['a plain error', new Error('boom')],
    ['not an error at all', 'boom'],
  ])('is not confused with a wrong statement: %s', (_, e) => {
    expect(isDatabaseUnavailable(e)).toBe(false);
    expect(asDatabaseUnavailable(e)).toBe(e);
  });

  it('reaches an API client as 503 database_unavailable in the envelope, with Retry-After', () => {
    const r = toErrorResponse(asDatabaseUnavailable(pgError('57P01', 'terminating connection')), 'req-1');
    expect(r.status).toBe(503);
    expect(r.headers['Retry-After']).toBe('1');
    expect(r.body.error).toMatchObject({ code: 'database_unavailable', request_id: 'req-1' });
  });
});
