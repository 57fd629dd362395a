/*
 * claims.h: resources held for a preemptor (R-E6), claims.c.  Every call
 * is a no-op unless the snapshot's evict is set.
 */
#ifndef TIDE_CLAIMS_H
#define TIDE_CLAIMS_H

#include "engine_int.h"

/* Before the walk, after tide_prepare_jobs: charge the claims of earlier cycles. */
extern void tide_claims_begin(TideWork *w);

/* The walk reached job j: its claims are its own to use. */
extern void tide_claims_take(TideWork *w, int j);

/* Job j was tried: if it did not fit, hold its claims again. */
extern void tide_claims_give(TideWork *w, int j, bool placed);

/*
 * Does job j own claims some victim of which is still stopping?  Its
 * reasons are then replaced after the walk (tide_claims_settle).
 */
extern bool tide_claims_waiting(const TideWork *w, int j);

/*
 * False makes the walk diagnose waiting owners node by node like any job
 * (tests compare the two); true outside tests.
 */
extern bool tide_claims_quiet_owners;

/* After the walk: owners waiting or lapsed, and "held for" reasons (R-C2). */
extern void tide_claims_settle(TideWork *w);

/*
 * At the end of the decide: give back what is still charged.  The next
 * cycle's snapshot charges the claims again, so a snapshot kept from one
 * decide call to the next must not keep them.
 */
extern void tide_claims_end(TideWork *w);

#endif							/* TIDE_CLAIMS_H */
