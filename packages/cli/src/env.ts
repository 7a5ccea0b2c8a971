/** The process environment as the commands read it. */
export type Env = Record<string, string | undefined>;
