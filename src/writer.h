/*
 * writer.h: who is writing in this backend (writer.c): one value, set by
 * the writers that take over work the tables' triggers would do, and read
 * by those triggers (through tide._writer() in SQL) and by the change
 * counter.
 */
#ifndef TIDE_WRITER_H
#define TIDE_WRITER_H

/*
 * The writers, in the order of the SQL enum tide.writer
 * (extension/21_helpers.sql), whose labels writer.c names.
 */
typedef enum TideWriter
{
	TIDE_WRITER_NONE = 0,		/* an ordinary statement: every trigger fires */
	TIDE_WRITER_SUBMIT,			/* tide.submit's own three INSERTs (submit.c) */
	TIDE_WRITER_CYCLE,			/* tide.run_cycle() runs (cycle.c) */
	TIDE_WRITER_CYCLE_WRITE		/* one of the cycle's own writes (cycle_guard.c) */
} TideWriter;

#define TIDE_WRITER_COUNT (TIDE_WRITER_CYCLE_WRITE + 1)

/* Who writes now. */
extern TideWriter tide_writer(void);

/*
 * Make w the writer and return the one before, for the caller to put back
 * with tide_writer_set() however its statements end (PG_FINALLY).
 */
extern TideWriter tide_writer_set(TideWriter w);

/* Does this backend run a cycle now (its own writes included)? */
extern bool tide_writer_in_cycle(void);

#endif							/* TIDE_WRITER_H */
