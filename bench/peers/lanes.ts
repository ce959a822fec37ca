/** Runs `n` turns, `concurrency` at a time (each lane takes the next turn when its last one ends). */
export async function lanes(n: number, concurrency: number, turn: () => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < n) {
      next += 1;
      await turn();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}
