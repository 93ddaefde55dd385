/**
 * Reads the apiserver audit log (write verbs only, Metadata level; RateLimit status writes with
 * their request bodies) to count writes per user.
 */

/** The fields of an audit event that tests use. */
export interface AuditEvent {
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  user: { username: string; groups?: string[] };
  objectRef?: {
    resource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
    subresource?: string;
  };
  responseStatus?: { code?: number };
  /** The request's body, where the policy records it (RateLimit, Scaler, Serverless status writes). */
  requestObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
}

/** Filter of {@link countWrites} / {@link readWrites}. */
export interface WriteFilter {
  /** User name, e.g. `admin` or `platform-operator`. */
  user: string;
  /** Only requests received at or after this time (epoch milliseconds). */
  sinceMs?: number;
  /** Only this resource (plural, e.g. `deployments`). */
  resource?: string;
  /** Only this namespace. */
  namespace?: string;
  /** Only requests that succeeded (HTTP 2xx). Default false: every attempt counts. */
  successfulOnly?: boolean;
}

/** All completed audit events of the log at `path` (empty when missing). */
export async function readAuditEvents(path: string): Promise<AuditEvent[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  const events: AuditEvent[] = [];
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    try {
      const ev = JSON.parse(line) as AuditEvent;
      if (ev.stage === "ResponseComplete" || ev.stage === "Panic") events.push(ev);
    } catch {
      // A partially written last line; ignore it.
    }
  }
  return events;
}

/** The write events matching `f`. */
export async function readWrites(path: string, f: WriteFilter): Promise<AuditEvent[]> {
  const events = await readAuditEvents(path);
  return events.filter((ev) => {
    if (ev.user?.username !== f.user) return false;
    if (f.sinceMs !== undefined && Date.parse(ev.requestReceivedTimestamp) < f.sinceMs) {
      return false;
    }
    if (f.resource !== undefined && ev.objectRef?.resource !== f.resource) return false;
    if (f.namespace !== undefined && ev.objectRef?.namespace !== f.namespace) return false;
    if (f.successfulOnly) {
      const code = ev.responseStatus?.code ?? 0;
      if (code < 200 || code > 299) return false;
    }
    return true;
  });
}

/** Number of write requests (create/update/patch/delete/deletecollection) matching `f`. */
export async function countWrites(path: string, f: WriteFilter): Promise<number> {
  return (await readWrites(path, f)).length;
}
