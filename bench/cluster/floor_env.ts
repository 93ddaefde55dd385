/**
 * How a connecting floor program (floor_connections.ts, floor_startup.ts) reaches the API server as
 * the operator's user, from the variables floor.ts sets: FLOOR_SERVER, FLOOR_CA (PEM), FLOOR_TOKEN.
 * Imports nothing, so a floor loads none of the operator's code.
 */

/** A variable floor.ts sets; its absence is a mistake in the bench, not in the cluster. */
export function floorEnv(name: string): string {
  const v = Deno.env.get(name);
  if (v === undefined) throw new Error(`floor: ${name} is not set`);
  return v;
}

/** The API server's address, its CA for an HTTP client, and the operator's bearer header. */
export function floorServer(): {
  server: string;
  caCerts: string[];
  headers: Record<string, string>;
} {
  return {
    server: floorEnv("FLOOR_SERVER"),
    caCerts: [floorEnv("FLOOR_CA")],
    headers: { authorization: `Bearer ${floorEnv("FLOOR_TOKEN")}` },
  };
}
