/** Transport-neutral notification helpers shared by the notification adapters (issue 31). */
export { isIanaZone, quietUntil } from './quiet-hours';
export { signatureHeader, webhookBody, WebhookTransport, type WebhookTarget } from './webhook-transport';
export { checkWebhookUrl } from './webhook-url';
