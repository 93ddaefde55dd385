import assert from "node:assert/strict";
import { RESOURCES } from "../../src/api/resources.ts";
import { recordFirstLists } from "../../src/kube/first_lists.ts";
import { ApiError, type Cluster, type ListOptions } from "../../src/runtime/cluster.ts";

Deno.test("the first page listed of each type is remembered: its answer or its error, never a later page's", async () => {
  const listed: string[] = [];
  const gone = new ApiError(404, "NotFound", "the server could not find the requested resource");
  const cluster = {
    list: (type: { plural: string }, opts?: ListOptions) => {
      listed.push(`${type.plural} ${opts?.continue ?? ""}`);
      if (type.plural === "envoyfilters") return Promise.reject(gone);
      // A later page that fails must not count: the first page answered the question.
      if (opts?.continue) return Promise.reject(new ApiError(410, "Expired", "too old"));
      return Promise.resolve({ items: [], resourceVersion: "1", continue: "next" });
    },
  } as unknown as Cluster;
  const { cluster: recording, answer } = recordFirstLists(cluster);
  assert.equal(answer(RESOURCES.RateLimit), undefined, "nothing listed yet");
  const page = await recording.list(RESOURCES.RateLimit, { limit: 2 });
  assert.equal(page.continue, "next", "pages pass through unchanged");
  await assert.rejects(recording.list(RESOURCES.RateLimit, { limit: 2, continue: "next" }));
  await assert.rejects(recording.list(RESOURCES.EnvoyFilter), gone);
  assert.equal(await answer(RESOURCES.RateLimit), undefined);
  assert.equal(await answer(RESOURCES.EnvoyFilter), gone);
  assert.equal(answer(RESOURCES.Pod), undefined);
  assert.deepEqual(listed, ["ratelimits ", "ratelimits next", "envoyfilters "]);
});
