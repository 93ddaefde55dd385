/**
 * A small in-memory API server for running the whole operator in a test: objects by path, lists,
 * watches that stay open (until the client goes), access reviews, and a switch to hide collections
 * (a CRD not installed). Enough for startup, leader election and shutdown; not a Kubernetes.
 */
import { json, type Seen, status, streamed } from "./fake_server.ts";

/** The fake's state and its request handler. */
export class FakeApi {
  readonly objects = new Map<string, Record<string, unknown>>();
  /** Collection path suffixes answered with 404, e.g. `/ratelimits`. */
  readonly missing = new Set<string>();
  #rv = 100;
  readonly #watches: ReturnType<typeof streamed>[] = [];

  /** Answers one request. */
  handle = (req: Seen): Response => {
    const path = req.path;
    if (req.method === "POST" && path.endsWith("/selfsubjectaccessreviews")) {
      const review = JSON.parse(req.body);
      return json({ ...review, status: { allowed: true } }, 201);
    }
    if ([...this.missing].some((m) => path.includes(m))) {
      return status(404, "NotFound", "the server could not find the requested resource");
    }
    if (req.method === "GET" && req.query.get("watch") === "true") {
      const s = streamed();
      this.#watches.push(s);
      return s.response;
    }
    if (req.method === "GET") {
      const obj = this.objects.get(path);
      if (obj) return json(obj);
      if (this.#isCollection(path)) {
        const items = [...this.objects].filter(([p]) => p.startsWith(path + "/")).map(([, o]) => o);
        return json({ metadata: { resourceVersion: String(this.#rv) }, items });
      }
      return status(404, "NotFound", `${path} not found`);
    }
    if (req.method === "POST") {
      const obj = this.#stamp(JSON.parse(req.body));
      const name = (obj.metadata as { name: string }).name;
      if (this.objects.has(`${path}/${name}`)) {
        return status(409, "AlreadyExists", `${name} already exists`);
      }
      this.objects.set(`${path}/${name}`, obj);
      return json(obj, 201);
    }
    if (req.method === "PUT") {
      this.objects.set(path, this.#stamp(JSON.parse(req.body)));
      return json(this.objects.get(path));
    }
    if (req.method === "DELETE") {
      return this.objects.delete(path)
        ? json({ kind: "Status", status: "Success" })
        : status(404, "NotFound", "gone");
    }
    return status(405, "MethodNotAllowed", `${req.method} ${path}`);
  };

  /** Ends every open watch. */
  close(): void {
    this.#watches.forEach((w) => w.end());
  }

  #isCollection(path: string): boolean {
    // /api/v1/pods, /api/v1/namespaces/x/pods, /apis/g/v/plural, /apis/g/v/namespaces/x/plural
    const parts = path.split("/").filter((p) => p);
    const rest = parts[0] === "api" ? parts.slice(2) : parts.slice(3);
    return rest.length === 1 || (rest.length === 3 && rest[0] === "namespaces");
  }

  #stamp(obj: Record<string, unknown>): Record<string, unknown> {
    const metadata = {
      ...(obj.metadata as Record<string, unknown>),
      resourceVersion: String(++this.#rv),
    };
    return { ...obj, metadata };
  }
}
