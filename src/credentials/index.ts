export { CREDENTIAL_NAME, type CredentialsConfig, CredentialsConfigSchema } from './config.js';
export type { Credential, CredentialSource } from './credential.js';
export { Credentials } from './credentials.js';
export { EnvCredentialSource, FileCredentialSource } from './sources.js';
