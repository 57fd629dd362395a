/*
 * changed.h: the change counter a scheduling cycle compares to skip its
 * load (changed.c, extension/64_change_counter.sql).
 */
#ifndef TIDE_CHANGED_H
#define TIDE_CHANGED_H

/*
 * Count a write the cycle reads: take tide._change_lock_key() shared until
 * the transaction ends, then draw the next tide.change_seq (what the
 * statement trigger tide._changed() does; tide.submit calls it once for its
 * rows, whose statements skip that trigger).
 */
extern void tide_note_change(void);

#endif
