/** Injection tokens: the composition root binds an adapter to each port. */
export const EVENT_STORE = Symbol('EventStore');
export const RUN_REPOSITORY = Symbol('RunRepository');
export const SESSION_REPOSITORY = Symbol('SessionRepository');
export const AGENT_CATALOG = Symbol('AgentCatalog');
export const CLOCK = Symbol('Clock');
export const ID_FACTORY = Symbol('IdFactory');
export const APP_SETTINGS = Symbol('AppSettings');

/** Application settings the handlers need (plain data). */
export interface ApplicationSettings {
  readonly defaultAgentId: string;
  readonly maxMessageChars: number;
}

/** Read models of the HTTP API (ports/read-models.ts). */
export const SESSION_READ_MODEL = Symbol('SessionReadModel');
export const APPROVAL_READ_MODEL = Symbol('ApprovalReadModel');
export const NOTIFICATION_INBOX = Symbol('NotificationInbox');
export const WEBHOOK_REGISTRY = Symbol('WebhookRegistry');
export const NOTIFICATION_PREFERENCES = Symbol('NotificationPreferences');
export const NOTIFICATION_PRODUCER = Symbol('NotificationProducer');
export const DEVICE_REGISTRY = Symbol('DeviceRegistry');
