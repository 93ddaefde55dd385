/**
 * When a replica with leader election lists its watches, and when a new term must list them
 * again. Every write of an earlier leader came before the read of the Lease a term is taken on
 * (that leader released the Lease, or its term ran out past its renew deadline), so lists sent
 * after that read see them. A replica's watches may also have stalled unnoticed (up to their idle
 * timeout) while it did not lead: a standby's, or those of a leader cut off the API server, whose
 * term ended and who takes its own Lease back once it reaches the server again (no one else took
 * it meanwhile, but the world changed). So any term taken on a later read lists again.
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
 * True when `term` must work from new lists: it is taken on a read answered after the watches
 * opened (`listedAfterRead`, undefined while they have not), whoever held the Lease before. Only a
 * term taken on the read the lists followed (the Lease created, or held already, at start-up)
 * needs none. A term taken back on this replica's own Lease lists again too: its last term ended
 * because it could not renew in time, cut off or slowed down, and its watches may have stalled
 * with it (sweep seed 600245: a partitioned leader took its Lease back and wrote a Scaler Ready
 * from a cache that still held the metrics Service deleted meanwhile).
 */
export function mustRelist(term: TermStart, listedAfterRead: number | undefined): boolean {
  return listedAfterRead !== undefined && term.read > listedAfterRead;
}
