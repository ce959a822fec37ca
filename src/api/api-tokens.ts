/** Injection tokens of the HTTP layer (the composition root binds them). */
export const EVENT_FEED = Symbol('EventFeed');
export const STREAM_HUBS = Symbol('StreamHubs');
export const NOTIFICATION_HUBS = Symbol('NotificationHubs');
export const API_SETTINGS = Symbol('ApiSettings');

export interface ApiSettings {
  readonly sseHeartbeatMs: number;
  /** Non-terminal runs a tenant may have at once; 0 disables the ceiling. */
  readonly maxActiveRunsPerTenant: number;
  /** A client whose unsent buffer grows past this is disconnected (it reconnects and replays). */
  readonly sseMaxBufferedBytes: number;
}
