/** How a simulated run stops early: a broken invariant, a wait that never ends, an escaped rejection. */

/** Thrown out of the driver to stop a run at its first violation. */
export class ViolationStop extends Error {}

/** The run cannot go on: what it waits for never happens within its bound of virtual time. */
export class Unfinished extends Error {
  override name = "Unfinished";
}

/** A promise rejection nobody handled, raised in the run it escaped from. */
export class EscapedRejection extends Error {
  override name = "EscapedRejection";
}
