// The rebuild's options, progress and report are the port's (src/ports/projection-rebuild.ts).
export * from '../../../ports/projection-rebuild';
