export * from './types';
export * from './errors';
export * from './setup-error';
export * from './logger';
export * from './config/load';
export type { Env, SeedKey } from './config/schema';
export {
  COUNT_FAMILIES,
  DEFAULT_FAMILY,
  IDENTITY_FAMILIES,
  TOPIC_FAMILIES,
  USER_MEMBER_FAMILIES,
  countFamilyOf,
} from './config/families';
export type { CountFamily } from './config/families';
export {
  configSchema,
  MAX_HISTORY_SIZE,
  MAX_HISTORY_TTL_SECONDS,
  isWebhookUrl,
  webhookConfig,
} from './config/schema';
export * from './names/channel-name';
export * from './names/api-key';
export * from './names/domain';
export * from './names/app-id';
export * from './broker/broker';
export * from './history/history';
export * from './history/history-memory';
export * from './history/retention';
export * from './actions/channel-actions';
export * from './actions/pusher-event';
export { isValidEpoch, MAX_EPOCH_LENGTH } from './history/epochs';
export { emptyEpoch, isEmptyEpoch, parseEmptyEpoch } from './history/empty-epochs';
export * from './broker/broker-memory';
export * from './presence/presence-store';
export * from './presence/presence-memory';
export * from './counts/connection-counts';
export * from './counts/counts-memory';
export * from './quotas/quotas';
export * from './quotas/quotas-memory';
export * from './logs/iso-time';
export * from './logs/message-log';
export * from './logs/message-log-memory';
export * from './keys/key-store';
export * from './keys/key-store-memory';
export * from './nodes/node-registry';
export * from './nodes/node-registry-memory';
export * from './engine';
export * from './webhooks/webhooks';
export * from './webhooks/webhooks-memory';
export * from './webhooks/dispatcher';
export * from './webhooks/private-addresses';
export * from './metrics/metrics';
export * from './metrics/metrics-server';
export * from './keys/seed-keys';
export * from './auth/auth-failures';
// The Redis engine as one unit: its clients, key names, scripts and stores stay inside core.
export { createRedisEngine } from './redis/redis-engine';
