import type { Principal } from '../domain/principal';

/** A registered device (issue 31 item 5): a name and a public key (SPKI PEM), per principal. */
export interface DeviceRecord {
  readonly id: string;
  readonly name: string;
  /** The key as stored: normalized SPKI PEM. */
  readonly publicKey: string;
  /** `ec-p256`, `ec-p384` or `ed25519`. */
  readonly keyType: string;
  /** Hex SHA-256 of the key's DER SPKI. */
  readonly fingerprint: string;
  readonly createdAt: string;
}

/**
 * A principal's devices, the identities a later push transport (APNs, Web Push) delivers to behind
 * the notification delivery port (ports/notification-delivery.ts). Another principal's or
 * tenant's device is not found.
 */
export interface DeviceRegistry {
  /**
   * Parses the public key (PEM or base64 DER SPKI of an EC P-256/P-384 or Ed25519 key) and stores
   * the device; a ValidationError (bad name, unparseable or unsupported key) stores nothing, a
   * ConflictError when the principal registered the same key already.
   */
  register(principal: Principal, name: string, publicKey: string): Promise<DeviceRecord>;
  list(principal: Principal): Promise<DeviceRecord[]>;
  get(principal: Principal, id: string): Promise<DeviceRecord | null>;
  /** True when it removed the device. */
  remove(principal: Principal, id: string): Promise<boolean>;
}
