export { bindProfiles, type BoundProfile } from './bindings';
export { loadProviderRegistry, PRICING_SNAPSHOT_FILE, REGISTRY_FILE } from './profile-loader';
export { recordPriceHistory } from './price-history';
