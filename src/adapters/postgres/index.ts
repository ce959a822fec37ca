/**
 * The PostgreSQL adapter's public module: what other adapters may use of it (docs/adr/0027-layer-rules.md).
 * The pool wrapper, the events-table row codec and the keyset-cursor helpers; everything else in
 * this folder is internal to it.
 */
export { Database, type Queryable } from './database';
export { decodeEvent, EVENT_COLUMNS, EVENT_COLUMNS_OF_E, RUN_EVENTS_JOIN, type EventRow } from './event-codec';
export { isoOf, isoOrNull, UUID_PATTERN } from './keyset-cursor';
