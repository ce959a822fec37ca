import { ValidationError } from '../../domain/errors';
import type { EvalCase } from './case-types';

/**
 * The cases `--case` names, in suite order. A selector matches a case by id (`02_calculator_tool`),
 * by name (`calculator_tool`) or by number (`02` or `2`). An unmatched selector is a usage error:
 * silently running fewer cases than asked for would look like a pass.
 */
export function selectCases(cases: readonly EvalCase[], selectors: readonly string[] | undefined): EvalCase[] {
  if (!selectors || selectors.length === 0) return [...cases];
  const chosen = new Set<EvalCase>();
  const unknown: string[] = [];
  for (const s of selectors) {
    const matches = cases.filter((c) => matchesSelector(c, s));
    if (matches.length === 0) unknown.push(s);
    for (const c of matches) chosen.add(c);
  }
  if (unknown.length > 0) {
    throw new ValidationError(`no eval case matches ${unknown.map((u) => `"${u}"`).join(', ')}`, { field: 'case' });
  }
  return cases.filter((c) => chosen.has(c));
}

function matchesSelector(c: EvalCase, selector: string): boolean {
  if (c.id === selector || c.name === selector) return true;
  const number = c.id.slice(0, c.id.indexOf('_'));
  return /^\d+$/.test(selector) && Number(selector) === Number(number);
}
