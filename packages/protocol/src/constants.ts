/** Port envd listens on inside every sandbox (fixed by the E2B SDK). */
export const ENVD_PORT = 49983;

/** Port of the code execution server in code-interpreter sandboxes (the E2B SDKs' JUPYTER_PORT). */
export const CODE_INTERPRETER_PORT = 49999;

/**
 * envd version Burrow advertises. The SDK gates features on it;
 * 0.6.13 is at or above every gate of SDK 2.51.0.
 */
export const ENVD_VERSION = "0.6.13";

/** User that commands and file operations run as unless a request names another. */
export const DEFAULT_USER = "user";

/** Sandbox ids: lowercase alphanumerics only, because host-based routing splits `<port>-<id>.<domain>` on `-`. */
export const SANDBOX_ID_PATTERN = /^[a-z0-9]{1,64}$/;

/** Where the read-only envd runtime (node, its libraries, the envd bundle) is mounted inside every sandbox. */
export const RUNTIME_MOUNT = "/.burrow";
