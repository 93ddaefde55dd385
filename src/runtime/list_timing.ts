/**
 * When a replica with leader election lists its watches, and when a new term must list them
 * again. Every write of an earlier leader came before the read of the Lease a term is taken on
 * (that leader released the Lease, or its term ran out past its renew deadline), so lists sent
 * after that read see them. A standby's watches may also have stalled unnoticed (up to their idle
 * timeout): a term taken on a later read lists again.
 */
import { type Clock, TIMER_CANCELLED } from "./clock.ts";
import type { LeaderElector, TermStart } from "./leader.ts";

/**
 * Calls `open` with the number of reads answered so far once the elector's first read of the Lease
 * is answered (or has failed), not after the write that takes it: at start-up most replicas lead
 * on their first read. A read that hangs delays a standby's lists by one retry period at most.
 */
export function listAfterFirstRead(
  elector: LeaderElector,
  clock: Clock,
  open: (afterRead: number) => void,
): void {
  const bound = new AbortController();
  Promise.race([
    elector.firstRead,
    clock.sleep(elector.retryPeriodMs, bound.signal).catch(() => {}),
  ]).then(() => {
    bound.abort(TIMER_CANCELLED);
    open(elector.reads);
  });
}

/**
 * True when `term` must work from new lists: it takes over from another holder, on a read answered
 * after the watches opened (`listedAfterRead`, undefined while they have not). A term on a Lease
 * this replica created, or held already, needs none: nobody else led in between.
 */
export function mustRelist(term: TermStart, listedAfterRead: number | undefined): boolean {
  return term.takeover && listedAfterRead !== undefined && term.read > listedAfterRead;
}
