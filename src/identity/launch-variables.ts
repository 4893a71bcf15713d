/**
 * Environment variables that describe the launch — the machine, the login, the terminal, the
 * editor or desktop client, the service manager — rather than the server a stdio upstream is.
 * They are left out of an upstream's identity (upstream-identity.ts) because many change from one
 * launch to the next (an editor's window or process id, an ssh-agent socket path, a terminal
 * session id, a temporary directory): kept in, a restarted agent's retry would meet another
 * identity and run its action a second time. Everything else the upstream is given (API tokens,
 * `MEMORY_FILE_PATH`, a database URL) says which server it is, and stays in.
 *
 * Names are compared upper-cased (Windows' names ignore case). The list is documented in
 * docs/gateway.md ("What is the same server"); a variable added here changes the identity of
 * every upstream that is given it, as an upgrade of Idem does (docs/adr/0043).
 */

/** Exact names. */
const LAUNCH_NAMES = words(
  // The login and the machine.
  'PATH HOME USER LOGNAME USERNAME SHELL PWD OLDPWD SHLVL _ MAIL HOSTNAME HOSTTYPE MACHTYPE',
  'OSTYPE TZ TMPDIR TMP TEMP LANG LANGUAGE SUDO_USER SUDO_UID SUDO_GID SUDO_COMMAND MOTD_SHOWN',
  // The terminal and the shell around it.
  'COLORTERM COLUMNS LINES LS_COLORS PAGER EDITOR VISUAL MANPATH INFOPATH STY WINDOW WINDOWID',
  'VTE_VERSION WT_SESSION WT_PROFILE_ID TERM_SESSION_ID NO_COLOR FORCE_COLOR CLICOLOR',
  'CLICOLOR_FORCE HISTFILE HISTSIZE HISTFILESIZE HISTCONTROL',
  // The desktop session.
  'DISPLAY XAUTHORITY SESSION_MANAGER DESKTOP_SESSION GDMSESSION XMODIFIERS',
  'GIO_LAUNCHED_DESKTOP_FILE GIO_LAUNCHED_DESKTOP_FILE_PID ORIGINAL_XDG_CURRENT_DESKTOP',
  // macOS's launch services.
  'SECURITYSESSIONID COMMAND_MODE MALLOCNANOZONE',
  // The service manager (systemd) and make.
  'INVOCATION_ID JOURNAL_STREAM SYSTEMD_EXEC_PID MANAGERPID NOTIFY_SOCKET LISTEN_PID',
  'LISTEN_FDS LISTEN_FDNAMES MAKEFLAGS MAKELEVEL MFLAGS',
  // An npm script's (and npm_* below), and Node's own hand-overs to a child.
  'INIT_CWD NODE_CHANNEL_FD NODE_CHANNEL_SERIALIZATION_MODE NODE_UNIQUE_ID',
  // The MCP client hosting the gateway.
  'CLAUDECODE',
  // Windows: the system, the profile, the session.
  'SYSTEMROOT SYSTEMDRIVE WINDIR APPDATA LOCALAPPDATA USERPROFILE USERDOMAIN',
  'USERDOMAIN_ROAMINGPROFILE HOMEDRIVE HOMEPATH COMSPEC PATHEXT NUMBER_OF_PROCESSORS OS',
  'PROGRAMFILES PROGRAMFILES(X86) PROGRAMW6432 PROGRAMDATA COMMONPROGRAMFILES',
  'COMMONPROGRAMFILES(X86) COMMONPROGRAMW6432 ALLUSERSPROFILE PUBLIC LOGONSERVER SESSIONNAME',
  'CLIENTNAME COMPUTERNAME DRIVERDATA PSMODULEPATH PROMPT ONEDRIVE ONEDRIVECONSUMER',
  'ONEDRIVECOMMERCIAL',
);

/** Prefixes: a family of variables set by one program of the launch. */
const LAUNCH_PREFIXES = [
  'TERM', // TERM, TERM_PROGRAM, TERM_PROGRAM_VERSION, TERMINFO …
  'LC_',
  'LESS',
  'XDG_',
  'WAYLAND_',
  'DBUS_',
  'SSH_',
  'GPG_',
  'GNOME_',
  'GTK_',
  'QT_',
  'KDE_',
  'KONSOLE_',
  'KITTY_',
  'ALACRITTY_',
  'WEZTERM_',
  'ITERM_',
  'TMUX',
  'ZELLIJ',
  '__CF', // __CF_USER_TEXT_ENCODING, __CFBundleIdentifier
  'XPC_',
  'APPLE_',
  'VSCODE_',
  'ELECTRON_',
  'CHROME_',
  'CURSOR_',
  'CLAUDE_CODE_',
  'NVM_',
  'PROCESSOR_',
];

/** The names in `lines`, each a space-separated group. */
function words(...lines: string[]): Set<string> {
  return new Set(lines.flatMap((line) => line.split(' ')));
}

/** True for a variable that describes the launch, not the server (left out of an upstream's identity). */
export function isLaunchVariable(name: string): boolean {
  const upper = name.toUpperCase();
  return (
    LAUNCH_NAMES.has(upper) ||
    LAUNCH_PREFIXES.some((prefix) => upper.startsWith(prefix)) ||
    // What npm sets for a script it runs (npm_config_*, npm_package_*, npm_lifecycle_event …): lower
    // case, so that an upper-case NPM_TOKEN handed to a server on purpose stays in.
    name.startsWith('npm_')
  );
}
