import { ValidationError } from '../../../domain/errors';
import { PROJECTIONS, type Projection } from '../../../domain/projections';

/**
 * Resolves the requested projection names (default: all), in `PROJECTIONS` order so the rebuild
 * writes tables in the same order as the append. An unknown name is refused, listing the valid ones.
 */
export function selectProjections(names: readonly string[] | undefined): Projection[] {
  if (names === undefined || names.length === 0) return [...PROJECTIONS];
  const valid = PROJECTIONS.map((p) => p.name);
  const unknown = names.filter((n) => !valid.includes(n));
  if (unknown.length > 0) {
    throw new ValidationError(
      `unknown projection${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}; valid projections are: ${valid.join(', ')}`,
      { unknown, valid },
    );
  }
  return PROJECTIONS.filter((p) => names.includes(p.name));
}
