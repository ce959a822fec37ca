/** The logging adapter's public module (docs/adr/0027-layer-rules.md): the keys every log line redacts. */
export { REDACTED_KEYS } from './pino-logger';
