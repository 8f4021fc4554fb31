/** The environment variables that name the Control API and its token, over the agent config (settings.ts). */
export const CONTROL_URL_ENV = 'BLUE_AGENT_CONTROL_URL';
export const TOKEN_ENV = 'BLUE_AGENT_TOKEN';
