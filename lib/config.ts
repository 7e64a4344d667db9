/**
 * The one definition of handoff's settings (docs/contract.md §7). The CDK construct, the Lambda handler and
 * the local sandbox all read them from here: the sandbox from `HANDOFF_*` environment variables,
 * the construct from its properties, and the handler from the environment the construct (or the
 * sandbox) gives it via `settingsToEnvironment`. By concern: config-settings.ts (what each setting
 * is), config-checks.ts (their checks and the rules between them), config-environment.ts (the
 * `HANDOFF_*` variables) and config-timings.ts (what follows from them); those import each other,
 * never this file.
 */
export { DEFAULT_SETTINGS, PROPERTY_NAMES, type SettingNames, type Settings } from './config-settings';
export { ConfigError } from './errors';
export { checkEndpoint, checkLifetimes, MAX_PAYLOAD_LIMIT_BYTES, validateSettings } from './config-checks';
export { readSettings, RESOURCE_ENV, SETTING_VARIABLES, settingsToEnvironment, VARIABLE_NAMES } from './config-environment';
export {
  derivedTimings,
  longestDeliverySeconds,
  minimumRetentionDays,
  QUEUE_RETENTION_SECONDS,
  RETENTION_MARGIN_SECONDS,
} from './config-timings';
