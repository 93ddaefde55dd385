/**
 * How many engines the operator runs and what each may use, by default: apart from the engine's
 * reducer (mod.ts re-exports them) so that the flags' parser, which the operator loads at start,
 * loads none of the engine's code, which loads only when the operator runs the engine.
 */

/** Requests and limits of the engine's container (Kubernetes quantities). */
export interface EngineResources {
  requests: Record<string, string>;
  limits: Record<string, string>;
}

/** Two engines: one serves while the other restarts or moves (both share Redis's counters). */
export const DEFAULT_ENGINE_REPLICAS = 2;

/** Most engine replicas the operator runs (each holds a Redis pool of 10 connections). */
export const MAX_ENGINE_REPLICAS = 50;

/**
 * The engine's resources: it holds no counters (Redis does) and a configuration of a few KiB per
 * RateLimit; its Redis pool is 10 connections.
 */
export const DEFAULT_ENGINE_RESOURCES: EngineResources = {
  requests: { cpu: "100m", memory: "64Mi" },
  limits: { cpu: "1", memory: "256Mi" },
};
