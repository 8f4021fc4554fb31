/** The LaunchAgent's label (reverse-DNS); also its plist's file name. The one place it is spelled. */
export const LAUNCHD_LABEL = 'com.blue-agent.agent';
