/** The project's version, read from the one place it is written: deno.json's `version`. */
import config from "../../deno.json" with { type: "json" };

/** The version, e.g. `0.1.0`. */
export const VERSION: string = config.version;

/** What `--version` prints: the program and its version, as `kubectl version --client` names both. */
export function versionLine(): string {
  return `platform-operator ${VERSION}`;
}
