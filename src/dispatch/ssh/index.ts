// The SSH action channel: inventory hosts, command templates, durable markers (docs/channels-ssh.md).
export { CommandTemplate, MAX_COMMAND_BYTES } from './command-template.js';
export { hostKeyFingerprint, type ResolveCredential, type SshHost } from './host.js';
export { MARKER_DEFAULTS } from './markers.js';
export {
  type SshHostSpec,
  SshHostSpecSchema,
  SshHostsConfigSchema,
  type SshToolSpecConfig,
  type SshToolSpecConfigInput,
  SshToolSpecSchema,
  SshToolsConfigSchema,
} from './spec.js';
export { SshChannel, type SshToolSpec } from './ssh-channel.js';
export { refuseMissingArguments, refuseReadOnly, sshActionTool } from './tool.js';
