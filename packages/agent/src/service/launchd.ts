/**
 * Pure: the LaunchAgent property list that runs `blue-agent run` in the user's GUI session.
 */
import { BlueError } from '@blue-agent/contract/errors.js';
import { agentCommand, LAUNCHD_LABEL, MARKER, type ServiceSpec } from './spec.js';

export const LAUNCHD_MARKER_COMMENT =
  `<!-- ${MARKER}: written by \`blue-agent service install\`; edits are ` + `overwritten. -->`;

export function isOurPlist(text: string): boolean {
  return text.includes(`<!-- ${MARKER}`);
}

export function renderLaunchdPlist(spec: ServiceSpec): string {
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    LAUNCHD_MARKER_COMMENT,
    '<!-- Remove it with `blue-agent service uninstall`. -->',
    '<plist version="1.0">',
    '<dict>',
    '\t<key>Label</key>',
    `\t<string>${xml(LAUNCHD_LABEL)}</string>`,
    '\t<key>ProgramArguments</key>',
    '\t<array>',
    ...agentCommand(spec).map((word) => `\t\t<string>${xml(word)}</string>`),
    '\t</array>',
  ];
  // BLUE_AGENT_LOG=file: the agent logs to its own run.log, rotated at 1 MiB. launchd never rotates StandardOutPath,
  // so stdout would grow without bound; StandardErrorPath stays for what a crash prints.
  lines.push('\t<key>EnvironmentVariables</key>', '\t<dict>');
  for (const [name, value] of [...spec.env, ['BLUE_AGENT_LOG', 'file'] as const])
    lines.push(`\t\t<key>${xml(name)}</key>`, `\t\t<string>${xml(value)}</string>`);
  lines.push('\t</dict>');
  lines.push(
    // Started at login (and at bootstrap), restarted when it exits with a failure, like systemd's Restart=on-failure.
    // launchd has no RestartPreventExitStatus: a `run` started by this job that finds another agent running exits 0.
    '\t<key>RunAtLoad</key>',
    '\t<true/>',
    '\t<key>KeepAlive</key>',
    '\t<dict>',
    '\t\t<key>SuccessfulExit</key>',
    '\t\t<false/>',
    '\t</dict>',
    '\t<key>ThrottleInterval</key>',
    '\t<integer>10</integer>',
    // 0077: everything the agent creates is private to the user.
    '\t<key>Umask</key>',
    '\t<integer>63</integer>',
    '\t<key>StandardOutPath</key>',
    `\t<string>${xml(spec.stdoutPath)}</string>`,
    '\t<key>StandardErrorPath</key>',
    `\t<string>${xml(spec.stderrPath)}</string>`,
    '</dict>',
    '</plist>',
    '',
  );
  return lines.join('\n');
}

function xml(text: string): string {
  // XML 1.0 cannot carry most control characters at all, even escaped.
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(text)) {
    throw new BlueError(
      'SERVICE_FAILED',
      `a LaunchAgent property list cannot hold control characters: ${JSON.stringify(text)}`,
      {
        hint:
          'Install blue-agent (and Node.js) under a plain path, or unset that variable, then run `blue-agent ' +
          'service install` again.',
      },
    );
  }
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
