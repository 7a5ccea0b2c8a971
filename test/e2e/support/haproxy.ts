// HAProxy in front of gateways lives in packages/testing (the chaos run uses it outside Jest too).
export {
  haproxyBinary,
  haproxyInstalled,
  renderHaproxyConfig,
  requireHaproxy,
  startHaproxy,
} from '@switchboard/testing';
export type {
  HaproxyBackend,
  HaproxyOptions,
  HaproxyServerState,
  RunningHaproxy,
} from '@switchboard/testing';
