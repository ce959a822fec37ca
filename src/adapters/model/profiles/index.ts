export { bindProfiles, type BoundProfile } from './bindings';
export { loadProviderRegistry, REGISTRY_FILE } from './profile-loader';
export { recordPriceHistory } from './price-history';
