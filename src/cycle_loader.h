/*
 * cycle_loader.h: what the two halves of the load share, below both
 * (cycle_loader.c): the load in progress and its lookups.  cycle_load.c
 * reads the cluster's rows and orders the load, cycle_jobs.c the pending
 * jobs; neither calls back into the other.
 */
#ifndef TIDE_CYCLE_LOADER_H
#define TIDE_CYCLE_LOADER_H

#include "executor/spi.h"

#include "cycle_cache.h"
#include "cycle_snapshot.h"

/*
 * Rows are deformed once and kept, one row per result table:
 * SPI_getbinval would walk every earlier varlena column again for each
 * column asked.
 */
#define ROWCACHE_COLS 24
#define ROWCACHE_TABLES 8

typedef struct RowCache
{
	SPITupleTable *t;
	uint64		row;
	Datum		vals[ROWCACHE_COLS];
	bool		nulls[ROWCACHE_COLS];
} RowCache;

/*
 * Names sorted by strcmp (the queries' COLLATE "C" order), to look up the
 * index of a node or queue by its name: by a hash table once
 * loader_name_map_hash() made one (every allocation names its node, every
 * job its queue: at 100k jobs a binary search's strncmps were a tenth of
 * an incremental load), else by binary search.
 */
typedef struct NameMap
{
	char	  **names;
	int			n;
	int32	   *slot;			/* hash.h's open addressing: index + 1, 0 empty; or NULL */
	uint64		mask;
} NameMap;

/*
 * The snapshot's resource ids of the last resource vector's names, so that
 * a run of vectors naming the same resources (most jobs ask for cpu,
 * memory and gpu) looks each name up once: loader_resvec_to_vec_memo().
 */
#define RESVEC_MEMO_MAX 16
#define RESVEC_MEMO_BYTES 256

typedef struct ResVecMemo
{
	int32		count;			/* -1: nothing (a vector too big to remember) */
	int32		names_size;
	uint32		name_off[RESVEC_MEMO_MAX];
	uint32		name_len[RESVEC_MEMO_MAX];
	int32		res[RESVEC_MEMO_MAX];	/* tide_res_lookup() of each, -1 none */
	char		names[RESVEC_MEMO_BYTES];
} ResVecMemo;

/*
 * A short-header varlena (all small ones as stored) unpacked into buf, so
 * that reading it copies nothing into memory; others as they are.
 */
#define SHORT_VARLENA_MAX (VARATT_SHORT_MAX - VARHDRSZ_SHORT + VARHDRSZ)

typedef union ShortBuf
{
	char		data[SHORT_VARLENA_MAX];
	int64		align;
} ShortBuf;

static inline Datum
loader_unpack_short(Datum d, ShortBuf *buf)
{
	struct varlena *v = (struct varlena *) DatumGetPointer(d);
	Size		n;

	if (!VARATT_IS_SHORT(v))
		return d;
	n = VARSIZE_SHORT(v) - VARHDRSZ_SHORT;
	SET_VARSIZE(buf->data, n + VARHDRSZ);
	memcpy(buf->data + VARHDRSZ, VARDATA_SHORT(v), n);
	return PointerGetDatum(buf->data);
}

/*
 * Names interned into small integers in order of first appearance (the
 * owners of jobs and allocations, the names only jobs use): hash.h's open
 * addressing over the names' ids, the names themselves in the caller's
 * array.  A dynahash table copied and compared fixed-size keys of 320
 * bytes for each of 100k jobs.
 */
typedef struct InternTable
{
	int32	   *slot;			/* id + 1, 0 empty; NULL until the first name */
	uint64	   *hash;			/* by id: each name's hash, for growing */
	uint64		mask;
} InternTable;

/* A node's row as Q_NODES streams it (cycle_load.c). */
struct NodeRow;
struct ResVec;

/*
 * Room for small copies (names, texts, varlenas of rows): many copies in
 * few allocations of cxt, block bytes at a time.
 */
typedef struct LoaderArena
{
	MemoryContext cxt;
	Size		block;
	char	   *next;
	Size		left;
	Size		used;			/* bytes taken so far */
} LoaderArena;

/* len bytes from the arena (MAXALIGNed). */
extern void *loader_arena_take(LoaderArena *a, Size len);

/* A varlena datum as stored (a short header stays short), detoasted if it is not. */
extern Datum loader_arena_datum(LoaderArena *a, Datum d);

/* One load in progress. */
typedef struct Loader
{
	CycleLoad  *l;
	TideSnapshot *s;
	struct NodeRow **node_rows; /* the nodes, by name once sorted */
	int			nnode_rows;
	int			node_rows_cap;
	SPITupleTable *queues,
			   *claims;
	CycleRowSet *allocs;		/* the live allocations' rows (cycle_cache.c) */
	int			nallocs_done;	/* of them in s->running */
	CycleDelta	delta;			/* what changed since a kept load */
	const char *group;			/* the resource group loaded, NULL: all */
	Datum		group_queues;	/* text[] of its queues' names */
	Datum		group_nodes;	/* text[] of its nodes' names */
	NameMap		node_names;
	NameMap		queue_names;
	char	  **group_names;	/* resource group ids, in order of appearance */
	int			ngroups;
	InternTable unknown;		/* what jobs ask for that nothing offers */
	const char **unknown_names; /* the snapshot's unknown_names, by id */
	int			nunknown;
	int			unknown_cap;
	InternTable owners;			/* owner name -> id, for queues with an
								 * owner limit (R-A4) or order (R-O7) */
	const char **owner_names;	/* the snapshot's owner_names, by id */
	int			nowners;
	int			owners_cap;
	int			jobs_cap;		/* room in the job arrays (cycle_jobs.c) */
	int			roles_cap;		/* room in the role arrays */
	int64	   *requests;		/* the roles' request vectors, nres each */
	char	   *role_name;		/* the last role name copied */
	LoaderArena arena;			/* copies for the load (ld->l->mcxt) */
	RowCache	cache[ROWCACHE_TABLES];
	ResVecMemo	resvec_memo;	/* for the rows' vectors, once every name is in */
} Loader;

/*
 * Room for small copies kept for the whole load (names, varlenas of rows
 * that are not kept): many copies in few allocations of ld->l->mcxt.
 */
extern void *loader_arena_alloc(Loader *ld, Size len);

/* A varlena datum copied there as stored (a short header stays short), detoasted if it is not. */
extern Datum loader_arena_copy(Loader *ld, Datum d);

/* Index of the name of len bytes at key (no NUL needed) in the map, or -1. */
extern int	loader_name_index_len(const NameMap *m, const char *key, int len);
/* The same for a text datum (read in place: a short one is not copied). */
extern int	loader_name_index_text(const NameMap *m, Datum d);

/* Make m's hash table in mcxt, once its names are all in. */
extern void loader_name_map_hash(NameMap *m, MemoryContext mcxt);

/*
 * Id (1 + index into the snapshot's unknown_names) of the reason for a
 * name only jobs use (R-A2), added on first use.
 */
extern int32 loader_unknown_name(Loader *ld, const char *reason);

/*
 * The id of an owner name of len bytes (R-A4), made on first use; ids
 * number the snapshot's owner_names from 0.
 */
extern int32 loader_owner_id(Loader *ld, const char *name, int len);

/*
 * Fill v (nres, zeroed) from a resvec: its quantities in milli.  Returns
 * the first name the snapshot does not know, or NULL.
 */
extern const char *loader_resvec_to_vec(TideSnapshot *s, Datum d, int64 *v);

/*
 * The same, the names' ids remembered in memo (zeroed at first): for the
 * rows of one load once every resource name is interned.
 */
extern const char *loader_resvec_to_vec_memo(TideSnapshot *s, ResVecMemo *memo, Datum d,
											 int64 *v);

/*
 * Does memo hold the names of rv (in order)?  If not, it does now (the
 * ids left unset): a run of vectors naming the same resources is
 * interned once.  A memo given to this is not for the function above.
 */
extern bool loader_resvec_names_seen(ResVecMemo *memo, const struct ResVec *rv);

/* The engine's service type of a service_type text of len bytes. */
extern int	loader_service_of_len(const char *s, int len);

/*
 * The parameters of every load query: $1 the resource group (NULL: every
 * group), $2 and $3 the names of its queues and nodes, $4 the jobs an
 * incremental load reads again (cycle_cache.c); a query uses the first 3
 * or all LOADER_NARGS.
 */
#define LOADER_NARGS 4
extern void loader_query_args(const Loader *ld, Oid *types, Datum *args, bool *nulls);

/*
 * An incremental load's rows of a query (jobs: the jobs query, else the
 * allocations'): the changed jobs' rows as changed_sql reads them now,
 * merged into the kept ones (cycle_cache_rows).
 */
extern CycleRowSet *loader_changed_rows(Loader *ld, bool jobs, const char *changed_sql, int job_col);

#endif							/* TIDE_CYCLE_LOADER_H */
