/** A positive number from the environment (a bench knob), or `fallback` when unset or not positive. */
export function envNumber(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}
