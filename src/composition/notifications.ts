import { PgNotificationInbox } from '../adapters/postgres/notifications/pg-notification-inbox';
import { PgNotificationPreferences } from '../adapters/postgres/notifications/pg-notification-preferences';
import { PgDevices } from '../adapters/postgres/notifications/pg-devices';
import { PgWebhooks } from '../adapters/postgres/notifications/pg-webhooks';
import type { Database } from '../adapters/postgres/database';
import { NotificationProducer } from '../application/notifications/notification-producer';
import type { DeviceRegistry } from '../ports/devices';
import type { EventStore } from '../ports/event-store';
import type { NotificationInbox, NotificationPreferenceStore, WebhookRegistry } from '../ports/notifications';

/** The notification services (issue 31, ADR 0036) the API and the CLI share, by their ports. */
export interface NotificationServices {
  readonly inbox: NotificationInbox;
  readonly webhooks: WebhookRegistry;
  readonly preferences: NotificationPreferenceStore;
  /** External producers' notifications (`POST /v1/notifications`). */
  readonly producer: NotificationProducer;
  /** Device identities for later push transports (`/v1/devices`). */
  readonly devices: DeviceRegistry;
}

export function createNotifications(db: Database, store: EventStore): NotificationServices {
  const inbox = new PgNotificationInbox(db);
  return {
    inbox,
    producer: new NotificationProducer(store, inbox),
    devices: new PgDevices(db),
    webhooks: new PgWebhooks(db),
    preferences: new PgNotificationPreferences(db),
  };
}
