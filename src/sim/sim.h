/*
 * sim.h: tide-sim, the trace replayer that runs the policy engine
 * (src/engine) outside the server.  Shared pieces: CSV reading with
 * file:line errors, the documented PRNG, memory for the engine.
 */
#ifndef TIDE_SIM_H
#define TIDE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Exit codes: 0 ok, 1 bad input data or failure, 2 bad usage. */
#define SIM_EXIT_DATA	1
#define SIM_EXIT_USAGE	2

/* ---- csv.c ---- */

#define CSV_MAX_FIELDS 32

/* A CSV file read whole; lines are split in place. */
typedef struct CsvFile
{
	const char *path;
	char	   *buf;
	size_t		len;
	size_t		pos;
	int			lineno;			/* of the line last returned by csv_next */
	int			nfields;
	char	   *field[CSV_MAX_FIELDS];
	int			ncols;			/* header columns */
	char	   *col[CSV_MAX_FIELDS];	/* header names */
} CsvFile;

extern void csv_open(CsvFile *f, const char *path);
extern bool csv_next(CsvFile *f);
extern int	csv_column(CsvFile *f, const char *name, bool required);
extern const char *csv_get(CsvFile *f, int col);
extern int64_t csv_int(CsvFile *f, int col, int64_t lo, int64_t hi);
extern double csv_double(CsvFile *f, int col, double lo, double hi);
extern void csv_fail(CsvFile *f, int col, const char *fmt,...)
			__attribute__((format(printf, 3, 4), noreturn));
extern void csv_close(CsvFile *f);

/* ---- util.c ---- */

extern const char *sim_progname;
extern void sim_die(int code, const char *fmt,...)
			__attribute__((format(printf, 2, 3), noreturn));
extern void *sim_alloc(size_t size);	/* zeroed, never NULL */
extern void *sim_realloc(void *p, size_t size);
extern char *sim_strdup(const char *s);
extern TideMem sim_mem(void);

/* Every block a snapshot took, freed at once by sim_pool_reset. */
typedef struct SimPool
{
	struct PoolBlock *head;
} SimPool;
extern TideMem sim_pool_mem(SimPool *pool);
extern void sim_pool_reset(SimPool *pool);
extern double sim_now(void);	/* monotonic seconds, for timings */
extern int	sim_cmp_double(const void *a, const void *b);	/* qsort, ascending */
/* The p-th percentile (0 < p <= 1) of sorted x[0..n), by nearest rank; 0 if n = 0. */
extern double sim_percentile(const double *x, int64_t n, double p);

/* Options parsed by hand: --name VALUE or --name=VALUE. */
extern int64_t sim_parse_int(const char *opt, const char *v, int64_t lo, int64_t hi);
extern double sim_parse_double(const char *opt, const char *v, double lo, double hi);
/* A placement chosen by the simulator, not the engine (openb only): see openb.c. */
#define SIM_POLICY_FGD	100
extern int	sim_parse_policy(const char *v, bool allow_sim_policies);
extern bool sim_opt(int argc, char **argv, int *i, const char *name, const char **val);

/*
 * ---- rng.c ----
 * xoshiro256** (Blackman and Vigna, 2018) seeded by four outputs of
 * splitmix64 from the user's seed; bounded draws by rejection, so results
 * are the same on every machine and compiler.
 */
typedef struct SimRng
{
	uint64_t	s[4];
} SimRng;

extern void rng_seed(SimRng *r, uint64_t seed);
extern uint64_t rng_next(SimRng *r);
extern uint64_t rng_below(SimRng *r, uint64_t n);	/* uniform in [0, n) */

/* ---- commands ---- */
extern int	openb_main(int argc, char **argv);
extern int	philly_main(int argc, char **argv);
extern int	tidal_main(int argc, char **argv);

#endif							/* TIDE_SIM_H */
