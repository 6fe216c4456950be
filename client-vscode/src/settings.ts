// The `baton` settings section → what the server reads (initializationOptions and
// workspace/configuration). Pure, so the mapping is unit-tested.

/** Keys only the client uses; the server ignores them, so they are not sent at all. */
const CLIENT_ONLY = new Set(["interpreter", "server", "trace", "trustWorkspace"]);
/** `baton.workflow.runner`'s default: no override, the project's `[workflow] runner`. */
export const PROJECT_RUNNER = "project";
/** Workflow keys that only the palette uses. */
const CLIENT_ONLY_WORKFLOW = new Set(["defaultScope"]);

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The settings object the server gets. Unset workflow options (null) are dropped so the
 * project's `[workflow]` table applies; trust is never taken from settings a workspace could
 * ship itself: it is VS Code's workspace trust. */
export function serverSettings(raw: Record<string, unknown>, trusted: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (CLIENT_ONLY.has(key) || value === undefined || typeof value === "function") continue;
    if (key === "workflow") {
      if (!isObject(value)) continue;
      const wf: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) {
        if (v === null || v === undefined || v === "" || CLIENT_ONLY_WORKFLOW.has(k)) continue;
        if (k === "runner" && v === PROJECT_RUNNER) continue; // the project's `[workflow] runner`
        wf[k] = v;
      }
      if (Object.keys(wf).length > 0) out.workflow = wf;
      continue;
    }
    if (value === null) continue;
    out[key] = value;
  }
  out.trustWorkspace = trusted;
  return out;
}

export interface InitializationOptions {
  trusted: boolean;
  settings: Record<string, unknown>;
}

export function initializationOptions(raw: Record<string, unknown>, trusted: boolean): InitializationOptions {
  return { trusted, settings: serverSettings(raw, trusted) };
}

/** Settings whose change needs a new server process (a different executable, or the log
 * level, which the server takes from its command line); every other
 * `baton.*` change is sent as didChangeConfiguration. */
export const RESTART_SETTINGS = ["baton.interpreter", "baton.server.path", "baton.logLevel"] as const;

export function needsRestart(affects: (section: string) => boolean): boolean {
  return RESTART_SETTINGS.some((s) => affects(s));
}
