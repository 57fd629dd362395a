/*
 * test_engine_fixture.h: build engine snapshots from short text specs, for
 * the engine's C tests.  Quantities as in tide.resvec ("cpu=4, memory=8Gi,
 * gpu=0.5"); the arena gives everything back at fx_free().
 */
#ifndef TEST_ENGINE_FIXTURE_H
#define TEST_ENGINE_FIXTURE_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* test tables name only the fields that matter */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

typedef struct FxArena
{
	void	  **p;
	int			n,
				cap;
} FxArena;

static inline void *
fx_alloc(void *ctx, size_t size)
{
	FxArena    *a = ctx;
	void	   *p = malloc(size);

	if (!p)
		abort();
	if (a->n == a->cap)
	{
		a->cap = a->cap ? a->cap * 2 : 256;
		a->p = realloc(a->p, sizeof(void *) * a->cap);
	}
	a->p[a->n++] = p;
	return p;
}

typedef struct FxNode
{
	const char *name;
	const char *cap;			/* resvec text */
	const char *gpu_type;		/* NULL: none */
	const char *topo;			/* "0,0,1,1": domain per GPU; NULL one domain */
	const char *labels;			/* "zone=a,rack=r1" */
	int			state;
	int			group;
} FxNode;

typedef struct FxQueue
{
	const char *name;
	const char *quota;			/* NULL: none */
	const char *capability;		/* NULL: no limit */
	int			priority;
	int			group;
	int			spread;
	const char *parent;			/* NULL: a top queue (R-O5) */
} FxQueue;

typedef struct FxJob
{
	int64_t		id;
	const char *queue;
	int			priority;
	int64_t		created;		/* any unit; only order matters */
	const char *req;
	int			replicas;		/* 0 = 1 */
	const char *req2;			/* optional second role */
	int			replicas2;
	int			idle,
				reserve,
				retry;
	int			min_available;
	const char *gpu_type;
	const char *selector;
	int64_t		time_limit;
	const char *avoid;			/* "n1,n2" */
} FxJob;

typedef struct FxRun
{
	const char *node;
	const char *queue;
	const char *res;
	uint64_t	gpus;
	int			milli;
	int			idle;
	int64_t		end_at;			/* 0: unknown */
} FxRun;

typedef struct Fx
{
	FxArena    *arena;			/* on the heap: an Fx may be returned by value */
	TideSnapshot *s;
	TideResult *r;
} Fx;

/* Parse "name=qty, ..." into milli units; intern names when v is NULL. */
static inline int64_t
fx_qty(const char *p, const char **end)
{
	double		v = strtod(p, (char **) end);
	const char *e = *end;
	int64_t		mult = 1000;

	if (e[0] == 'm' && !isalpha((unsigned char) e[1]))
	{
		mult = 1;
		e++;
	}
	else if (e[0] && e[1] == 'i' && strchr("KMGTP", e[0]))
	{
		int			k = (int) (strchr("KMGTP", e[0]) - "KMGTP") + 1;

		for (int i = 0; i < k; i++)
			mult *= 1024;
		e += 2;
	}
	else if (e[0] && strchr("kMGTP", e[0]) && !isalpha((unsigned char) e[1]))
	{
		int			k = (int) (strchr("kMGTP", e[0]) - "kMGTP") + 1;

		for (int i = 0; i < k; i++)
			mult *= 1000;
		e++;
	}
	*end = e;
	return (int64_t) (v * (double) mult + 0.5);
}

static inline void
fx_vec(TideSnapshot *s, const char *text, int64_t *v)
{
	const char *p = text;

	if (!text)
		return;
	while (*p)
	{
		char		name[64];
		int			n = 0;
		int64_t		q;
		const char *e;

		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		while (*p && *p != '=' && n < 63)
			name[n++] = *p++;
		name[n] = '\0';
		if (*p == '=')
			p++;
		q = fx_qty(p, &e);
		p = e;
		if (v)
		{
			int			r = tide_res_lookup(s, name);

			if (r >= 0)
				v[r] = q;
		}
		else
			tide_res_intern(s, name);
	}
}

static inline int
fx_labels(TideSnapshot *s, const char *text, int32_t *out)
{
	char		buf[256];
	int			n = 0;
	char	   *save = NULL;

	if (!text)
		return 0;
	snprintf(buf, sizeof(buf), "%s", text);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
	{
		char	   *eq = strchr(t, '=');
		int			id;

		while (*t == ' ')
			t++;
		if (!eq)
			continue;
		*eq = '\0';
		id = tide_label_intern(s, t, eq + 1);
		if (out)
		{
			int			k = n;

			while (k > 0 && out[k - 1] > id)
			{
				out[k] = out[k - 1];
				k--;
			}
			out[k] = id;
		}
		n++;
	}
	return n;
}

static inline int
fx_queue_index(TideSnapshot *s, const char *name)
{
	for (int i = 0; i < s->nqueues; i++)
		if (strcmp(s->queues[i].name, name) == 0)
			return i;
	return -1;
}

static inline int
fx_node_index(TideSnapshot *s, const char *name)
{
	for (int i = 0; i < s->nnodes; i++)
		if (strcmp(s->nodes[i].name, name) == 0)
			return i;
	return -1;
}

/* Build a snapshot; running allocations are charged (R-C4 state). */
static inline void
fx_build(Fx *fx, const FxNode *nodes, int nn, const FxQueue *queues, int nq,
		 const FxJob *jobs, int nj, const FxRun *runs, int nr)
{
	TideMem		mem = {fx_alloc, NULL, NULL};
	TideSnapshot *s;
	int			nroles = 0;
	char		err[256];

	memset(fx, 0, sizeof(*fx));
	fx->arena = calloc(1, sizeof(FxArena));
	mem.ctx = fx->arena;
	s = tide_snapshot_create(&mem);
	fx->s = s;
	for (int i = 0; i < nn; i++)
	{
		fx_vec(s, nodes[i].cap, NULL);
		if (nodes[i].gpu_type)
			tide_res_intern(s, nodes[i].gpu_type);
	}
	for (int i = 0; i < nq; i++)
	{
		fx_vec(s, queues[i].quota, NULL);
		fx_vec(s, queues[i].capability, NULL);
	}
	for (int i = 0; i < nj; i++)
	{
		fx_vec(s, jobs[i].req, NULL);
		fx_vec(s, jobs[i].req2, NULL);
		if (jobs[i].gpu_type)
			tide_res_intern(s, jobs[i].gpu_type);
		nroles += jobs[i].req2 ? 2 : 1;
	}
	for (int i = 0; i < nr; i++)
		fx_vec(s, runs[i].res, NULL);
	tide_snapshot_alloc_cluster(s, nn, nq, nr);
	tide_snapshot_alloc_jobs(s, nj, nroles);
	for (int i = 0; i < nn; i++)
	{
		TideNode   *n = &s->nodes[i];
		int32_t    *labels = tide_alloc(s, sizeof(int32_t) * 16);

		n->name = nodes[i].name;
		n->group = nodes[i].group;
		n->state = nodes[i].state;
		fx_vec(s, nodes[i].cap, n->capacity);
		n->ngpus = (int) (n->capacity[TIDE_RES_GPU] / 1000);
		n->gpu_type = nodes[i].gpu_type ? tide_res_lookup(s, nodes[i].gpu_type) : -1;
		if (nodes[i].topo)
		{
			const char *p = nodes[i].topo;

			for (int g = 0; g < n->ngpus && *p; g++)
			{
				n->gpu_domain[g] = (int16_t) strtol(p, (char **) &p, 10);
				while (*p == ',')
					p++;
			}
		}
		n->nlabels = fx_labels(s, nodes[i].labels, labels);
		n->labels = labels;
	}
	for (int i = 0; i < nq; i++)
	{
		TideQueue  *q = &s->queues[i];

		q->name = queues[i].name;
		q->group = queues[i].group;
		q->priority = queues[i].priority;
		q->placement = queues[i].spread ? TIDE_PLACE_SPREAD : TIDE_PLACE_PACK;
		if (queues[i].quota && queues[i].quota[0])
		{
			int64_t    *v = tide_vec_new(s);

			q->has_quota = true;
			for (int r = 0; r < s->nres; r++)
				v[r] = -1;
			fx_vec(s, queues[i].quota, v);
			for (int r = 0; r < s->nres; r++)
				q->quota[r] = v[r] < 0 ? TIDE_UNLIMITED : v[r];
		}
		if (queues[i].capability)
		{
			int64_t    *v = tide_vec_new(s);

			for (int r = 0; r < s->nres; r++)
				v[r] = -1;
			fx_vec(s, queues[i].capability, v);
			for (int r = 0; r < s->nres; r++)
				q->capability[r] = v[r] < 0 ? TIDE_UNLIMITED : v[r];
		}
	}
	for (int i = 0; i < nq; i++)
		if (queues[i].parent)
			s->queues[i].parent = fx_queue_index(s, queues[i].parent);
	nroles = 0;
	for (int i = 0; i < nj; i++)
	{
		TideJob    *j = &s->jobs[i];
		int32_t    *sel = tide_alloc(s, sizeof(int32_t) * 16);

		j->id = jobs[i].id;
		j->queue = fx_queue_index(s, jobs[i].queue ? jobs[i].queue : "q");
		j->priority = jobs[i].priority;
		j->created_at = jobs[i].created;
		j->idle = jobs[i].idle;
		j->reserve = jobs[i].reserve;
		j->is_retry = jobs[i].retry;
		j->min_available = jobs[i].min_available;
		j->gpu_type = jobs[i].gpu_type ? tide_res_lookup(s, jobs[i].gpu_type) : -1;
		j->time_limit = jobs[i].time_limit;
		j->nselector = fx_labels(s, jobs[i].selector, sel);
		j->selector = sel;
		if (jobs[i].avoid)
		{
			int32_t    *av = tide_alloc(s, sizeof(int32_t) * 16);
			char		buf[128];
			char	   *save = NULL;

			snprintf(buf, sizeof(buf), "%s", jobs[i].avoid);
			for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
				av[j->navoid++] = fx_node_index(s, t);
			j->avoid = av;
		}
		j->roles = &s->roles[nroles];
		j->nroles = jobs[i].req2 ? 2 : 1;
		s->roles[nroles].name = "main";
		s->roles[nroles].replicas = jobs[i].replicas ? jobs[i].replicas : 1;
		fx_vec(s, jobs[i].req, s->roles[nroles].request);
		nroles++;
		if (jobs[i].req2)
		{
			s->roles[nroles].name = "second";
			s->roles[nroles].replicas = jobs[i].replicas2 ? jobs[i].replicas2 : 1;
			fx_vec(s, jobs[i].req2, s->roles[nroles].request);
			nroles++;
		}
	}
	if (!tide_snapshot_finish(s, err, sizeof(err)))
	{
		printf("# fx_build: %s\n", err);
		abort();
	}
	for (int i = 0; i < nr; i++)
	{
		TideRunning *a = &s->running[i];
		int64_t    *v = tide_vec_new(s);
		int			q = fx_queue_index(s, runs[i].queue ? runs[i].queue : "q");

		fx_vec(s, runs[i].res, v);
		a->alloc_id = 1000 + i;
		a->job_id = 1000 + i;
		a->queue = q;
		a->node = fx_node_index(s, runs[i].node);
		a->idle = runs[i].idle;
		a->res = v;
		a->gpus = runs[i].gpus;
		a->gpu_milli = runs[i].milli;
		a->end_at = runs[i].end_at ? runs[i].end_at : TIDE_TIME_UNKNOWN;
		tide_charge(s, a->node, q, a->idle, v, a->gpus, a->gpu_milli, +1);
	}
}

static inline void
fx_free(Fx *fx)
{
	for (int i = 0; i < fx->arena->n; i++)
		free(fx->arena->p[i]);
	free(fx->arena->p);
	free(fx->arena);
	memset(fx, 0, sizeof(*fx));
}

static inline int
fx_job(const Fx *fx, int64_t id)
{
	for (int i = 0; i < fx->s->njobs; i++)
		if (fx->s->jobs[i].id == id)
			return i;
	return -1;
}

static inline int
fx_status(const Fx *fx, int64_t id)
{
	int			j = fx_job(fx, id);

	return j < 0 ? -1 : fx->r->outcomes[j].status;
}

/* "n1" or "n1,n2" (replica order) or "" when not placed. */
static inline const char *
fx_nodes(const Fx *fx, int64_t id)
{
	static char buf[512];
	int			j = fx_job(fx, id);
	const TideOutcome *o;
	size_t		off = 0;

	buf[0] = '\0';
	if (j < 0)
		return "?";
	o = &fx->r->outcomes[j];
	for (int i = 0; i < o->nplacements && off < sizeof(buf) - 64; i++)
		off += snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? "," : "",
						fx->s->nodes[fx->r->placements[o->first_placement + i].node].name);
	return buf;
}

static inline uint64_t
fx_gpus(const Fx *fx, int64_t id, int replica)
{
	int			j = fx_job(fx, id);
	const TideOutcome *o = &fx->r->outcomes[j];

	if (replica >= o->nplacements)
		return 0;
	return fx->r->placements[o->first_placement + replica].gpus;
}

static inline const char *
fx_reason(const Fx *fx, int64_t id)
{
	static char buf[1024];
	int			j = fx_job(fx, id);

	if (j < 0)
		return "?";
	tide_reason_text(fx->s, fx->r, j, buf, sizeof(buf));
	return buf;
}

/* Job ids in walk order, "1,2,3". */
static inline const char *
fx_walk(const Fx *fx)
{
	static char buf[1024];
	size_t		off = 0;

	buf[0] = '\0';
	for (int i = 0; i < fx->r->nwalk && off < sizeof(buf) - 32; i++)
		off += snprintf(buf + off, sizeof(buf) - off, "%s%lld", i ? "," : "",
						(long long) fx->s->jobs[fx->r->walk[i]].id);
	return buf;
}

/* Ids of placed jobs in walk order. */
static inline const char *
fx_placed(const Fx *fx)
{
	static char buf[1024];
	size_t		off = 0;

	buf[0] = '\0';
	for (int i = 0; i < fx->r->nwalk && off < sizeof(buf) - 32; i++)
	{
		int			j = fx->r->walk[i];

		if (fx->r->outcomes[j].status == TIDE_PLACED)
			off += snprintf(buf + off, sizeof(buf) - off, "%s%lld", off ? "," : "",
							(long long) fx->s->jobs[j].id);
	}
	return buf;
}

#endif
