/** Time and identity are injected (ports/clock.ts); domain code never reads ambient time or randomness. */
export type IsoTimestamp = string;
